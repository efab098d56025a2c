#!/usr/bin/env python3
"""Tests of scripts/bench/history.py, on copies in a temporary folder: python3 scripts/bench/history_test.py"""
import csv
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import history  # noqa: E402

RUN = {"run_utc": "2026-12-02 10:00 UTC", "commit": "abc1234", "machine": "2 × Test CPU, Linux 6",
       "load": "0.10 0.20 0.30 before, 0.40 0.50 0.60 after", "command": "scripts/bench/demo --write"}
FIRST = """Method: 3 rounds of 1,000 jobs.

### durability full

| system | jobs/s | p99, ms |
|---|---|---|
| adapt | 1,234 | 2.5 |
| peer | 1,000 | 3.0 |

Reading notes: adapt was 1.23× the peer.
"""
SECOND = """Method: 3 rounds of 1,000 jobs.

| system | jobs/s | p99, ms |
|---|---|---|
| adapt | 2,000 | 1.5 |
"""


def history_rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


class RecordTests(unittest.TestCase):
    def setUp(self):
        self.folder = Path(tempfile.mkdtemp())
        self.benchmarks = self.folder / "BENCHMARKS.md"
        self.history = self.folder / "BENCHMARKS-history.csv"
        self.benchmarks.write_text("# Benchmarks\n\nHeader.\n\n<!-- other-bench:start -->\n## Other\n\n"
                                   "| a | b |\n|---|---|\n| x | 1 |\n<!-- other-bench:end -->\n\n## Unmanaged\n\nText 7.\n")

    def tearDown(self):
        shutil.rmtree(self.folder)

    def test_first_run_of_a_benchmark_is_added_and_moves_nothing(self):
        before = self.benchmarks.read_text()
        self.assertEqual(history.record("demo", "Demo", RUN, FIRST, benchmarks=self.benchmarks), 0)
        text = self.benchmarks.read_text()
        self.assertTrue(text.startswith(before.rstrip("\n")))
        self.assertIn("<!-- demo-bench:start -->\n## Demo\n\n- Run: 2026-12-02 10:00 UTC\n- Commit: abc1234\n", text)
        self.assertIn("- Command: `scripts/bench/demo --write`", text)
        self.assertFalse(self.history.exists())

    def test_new_run_replaces_the_section_and_the_old_figures_move_to_the_history(self):
        history.record("demo", "Demo", RUN, FIRST, benchmarks=self.benchmarks)
        later = dict(RUN, run_utc="2026-12-03 11:00 UTC", commit="def5678")
        self.assertEqual(history.record("demo", "Demo", later, SECOND, benchmarks=self.benchmarks), 6)
        text = self.benchmarks.read_text()
        self.assertEqual(text.count("<!-- demo-bench:start -->"), 1)
        self.assertIn("| adapt | 2,000 | 1.5 |", text)
        self.assertNotIn("1,234", text)
        self.assertIn("| x | 1 |\n<!-- other-bench:end -->\n\n## Unmanaged\n\nText 7.\n", text)
        rows = history_rows(self.history)
        self.assertEqual({r["commit"] for r in rows}, {"abc1234"})
        self.assertEqual({r["run_utc"] for r in rows}, {"2026-12-02 10:00 UTC"})
        self.assertEqual({r["command"] for r in rows}, {"scripts/bench/demo --write"})
        cells = {(r["table"], r["case"], r["metric"], r["value"]) for r in rows if r["metric"] != "text"}
        self.assertEqual(cells, {("durability full", "adapt", "jobs/s", "1,234"),
                                 ("durability full", "adapt", "p99, ms", "2.5"),
                                 ("durability full", "peer", "jobs/s", "1,000"),
                                 ("durability full", "peer", "p99, ms", "3.0")})
        texts = [r["value"] for r in rows if r["metric"] == "text"]
        self.assertEqual(texts, ["Method: 3 rounds of 1,000 jobs.", "Reading notes: adapt was 1.23× the peer."])

    def test_third_run_appends_below_the_one_header(self):
        for day in ("02", "03", "04"):
            history.record("demo", "Demo", dict(RUN, run_utc=f"2026-12-{day} 10:00 UTC"), FIRST,
                           benchmarks=self.benchmarks)
        self.assertEqual(self.history.read_text().count("benchmark,run_utc"), 1)
        self.assertEqual(sorted({r["run_utc"] for r in history_rows(self.history)}),
                         ["2026-12-02 10:00 UTC", "2026-12-03 10:00 UTC"])

    def test_repeated_first_cells_name_a_row_by_its_first_cells(self):
        section = "| threads | tokens | tok/s |\n| --- | --- | --- |\n| 2 | 128 | 288 |\n| 2 | 256 | 284 |\n"
        rows = history.section_rows("train", section, RUN)
        self.assertEqual([(r["case"], r["metric"], r["value"]) for r in rows],
                         [("threads 2, tokens 128", "tok/s", "288"), ("threads 2, tokens 256", "tok/s", "284")])

    def test_broken_markers_are_refused_and_nothing_is_written(self):
        self.benchmarks.write_text("# Benchmarks\n\n<!-- demo-bench:start -->\n## Demo\n\n| a | b |\n|---|---|\n| x | 1 |\n")
        before = self.benchmarks.read_text()
        with self.assertRaises(history.HistoryError):
            history.record("demo", "Demo", RUN, SECOND, benchmarks=self.benchmarks)
        self.assertEqual(self.benchmarks.read_text(), before)
        self.assertFalse(self.history.exists())

    def test_a_run_without_its_command_is_refused(self):
        with self.assertRaises(history.HistoryError):
            history.record("demo", "Demo", dict(RUN, command=""), FIRST, benchmarks=self.benchmarks)

    def test_the_repository_files_follow_the_format(self):
        """Each managed section of BENCHMARKS.md lists its run; the CSV has the documented columns."""
        text = (history.ROOT / "BENCHMARKS.md").read_text()
        names = [part.split("-bench:start -->")[0] for part in text.split("<!-- ")[1:] if "-bench:start -->" in part]
        self.assertGreaterEqual(len(names), 6)
        for name in names:
            start, end = history.markers(name)
            section = text.split(start)[1].split(end)[0]
            rows = history.section_rows(name, section)
            self.assertTrue(rows, name)
            for field in history.COLUMNS[1:6]:
                self.assertTrue(rows[0][field], f"{name}: no {field}")
        with open(history.ROOT / "BENCHMARKS-history.csv") as f:
            reader = csv.DictReader(f)
            self.assertEqual(reader.fieldnames, history.COLUMNS)
            for row in reader:
                self.assertTrue(row["benchmark"] and row["run_utc"] and row["command"] and row["value"], row)

    def test_recording_into_a_copy_of_the_repository_file_moves_exactly_that_section(self):
        shutil.copy(history.ROOT / "BENCHMARKS.md", self.benchmarks)
        original = self.benchmarks.read_text()
        start, end = history.markers("train")
        old_section = original.split(start)[1].split(end)[0]
        expected = history.section_rows("train", old_section)
        moved = history.record("train", "LoRA training", RUN, SECOND, benchmarks=self.benchmarks)
        self.assertEqual(moved, len(expected))
        self.assertEqual(history_rows(self.history), expected)
        text = self.benchmarks.read_text()
        self.assertEqual(text.split(start)[0], original.split(start)[0])
        self.assertEqual(text.split(end)[1], original.split(end)[1])


class CleanTreeTests(unittest.TestCase):
    """A written run names a commit that reproduces it: a work tree with other changes is refused."""

    def setUp(self):
        self.folder = Path(tempfile.mkdtemp())
        def git(*args):
            subprocess.run(["git", "-C", str(self.folder), *args], check=True, capture_output=True)
        self.git = git
        git("init", "-q")
        git("config", "user.email", "bench@example.invalid")
        git("config", "user.name", "bench")
        (self.folder / "code.txt").write_text("one\n")
        (self.folder / "BENCHMARKS.md").write_text("# Benchmarks\n")
        git("add", "code.txt", "BENCHMARKS.md")
        git("commit", "-q", "-m", "start")

    def tearDown(self):
        shutil.rmtree(self.folder)

    def test_a_clean_tree_is_named_by_its_commit_and_recorded(self):
        history.require_clean(self.folder)
        self.assertNotIn("uncommitted", history.commit(self.folder))
        run = {key: value for key, value in RUN.items() if key != "commit"}
        history.record("demo", "Demo", run, FIRST, benchmarks=self.folder / "BENCHMARKS.md")
        self.assertIn("<!-- demo-bench:start -->", (self.folder / "BENCHMARKS.md").read_text())

    def test_the_recorders_own_files_changed_do_not_count(self):
        (self.folder / "BENCHMARKS.md").write_text("# Benchmarks\n\nAn earlier run, not yet committed.\n")
        history.require_clean(self.folder)
        self.assertNotIn("uncommitted", history.commit(self.folder))

    def test_a_changed_source_file_is_refused_before_measuring_and_named(self):
        (self.folder / "code.txt").write_text("two\n")
        with self.assertRaises(history.HistoryError) as refused:
            history.require_clean(self.folder)
        self.assertIn("code.txt", str(refused.exception))
        self.assertTrue(history.commit(self.folder).endswith(history.DIRTY))

    def test_a_run_measured_on_a_changed_tree_is_not_written(self):
        (self.folder / "code.txt").write_text("two\n")
        benchmarks = self.folder / "BENCHMARKS.md"
        before = benchmarks.read_text()
        for run in ({key: value for key, value in RUN.items() if key != "commit"},
                    dict(RUN, commit=history.commit(self.folder))):
            with self.assertRaises(history.HistoryError):
                history.record("demo", "Demo", run, FIRST, benchmarks=benchmarks)
        self.assertEqual(benchmarks.read_text(), before)


if __name__ == "__main__":
    unittest.main()
