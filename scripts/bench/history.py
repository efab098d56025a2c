#!/usr/bin/env python3
"""BENCHMARKS.md holds the latest run of each benchmark; BENCHMARKS-history.csv beside it holds every earlier one.

Each benchmark's section sits between `<!-- NAME-bench:start -->` and `<!-- NAME-bench:end -->` and begins
with its run: a list of `- Run:`, `- Commit:`, `- Machine:`, `- Load:` and `- Command:` lines. `record`
moves the section it replaces into the CSV before writing the new one, so a benchmark script never loses an
earlier run and BENCHMARKS.md never holds two runs of one benchmark.

The CSV is long: one row per figure. Every cell of a Markdown table becomes a row (`case` names the table's
row, by its first cell, or by its first cells when the first alone repeats; `metric` is the column's header;
`value` is the cell as printed, unit and all), and every other paragraph or list item of the section that
holds a digit becomes one row with metric `text` (the run's method and reading notes, figures in place).

A run measured on a work tree with uncommitted changes (other than those two files) names no commit that
reproduces it, so `record` refuses it; a script that will write calls `require_clean` before it measures (a
shell script: `scripts/bench/history.py --require-clean`).

The benchmark scripts import `record`; on the command line, `scripts/bench/history.py NAME < SECTION.md`
prints the rows a section would become. Tests: `python3 scripts/bench/history_test.py`.
"""
import argparse
import csv
import io
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
COLUMNS = ["benchmark", "run_utc", "commit", "machine", "load", "command", "table", "case", "metric", "value"]
RUN_FIELDS = {"Run": "run_utc", "Commit": "commit", "Machine": "machine", "Load": "load", "Command": "command"}
FIGURE = re.compile(r"\d")


class HistoryError(Exception):
    pass


def markers(name):
    return f"<!-- {name}-bench:start -->", f"<!-- {name}-bench:end -->"


# ---------------------------------------------------------------------------------------------------------
# The run a script measured


def machine():
    """`2 × AMD EPYC …, Linux 6.1.0`: the cores and CPU model a run saw, and the kernel."""
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor() or "unknown CPU")
    return f"{os.cpu_count()} × {cpu}, {platform.system()} {platform.release()}"


def load_average():
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# What a benchmark writes itself: a change to these alone does not make a run unreproducible.
RECORDER_FILES = ("BENCHMARKS.md", "BENCHMARKS-history.csv")
DIRTY = " + uncommitted changes"


def uncommitted(root=ROOT):
    """Tracked files of the work tree at `root` that differ from HEAD, but the recorder's own files."""
    status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                            capture_output=True, text=True).stdout
    paths = [line[3:].split(" -> ")[-1] for line in status.splitlines() if line.strip()]
    return [path for path in paths if path not in RECORDER_FILES]


def commit(root=ROOT):
    """The short hash of HEAD, with `+ uncommitted changes` when the work tree differs from it."""
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip() or "unknown"
    return head + (DIRTY if uncommitted(root) else "")


def require_clean(root=ROOT):
    """Refuses a work tree a written run could not name: a benchmark that will write calls this before measuring."""
    changed = uncommitted(root)
    if changed:
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        raise HistoryError(f"the work tree has uncommitted changes ({shown}), so no commit reproduces what would be "
                           "measured; commit them, or measure from a clean checkout (git worktree add), then rerun")


def exit_unless_clean(program, root=ROOT):
    """`require_clean` for a script about to measure: the reason on stderr and exit status 2 instead of a trace."""
    try:
        require_clean(root)
    except HistoryError as error:
        print(f"{program}: {error}", file=sys.stderr)
        sys.exit(2)


def now_utc():
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


# ---------------------------------------------------------------------------------------------------------
# A section as rows


def cells(line):
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def blocks(text):
    """The section's headings, tables and paragraphs (each list item a paragraph of its own), in order."""
    out, current = [], []

    def flush():
        if current:
            out.append(current[:])
            current.clear()

    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("<!--"):
            flush()
        elif stripped.startswith("#"):
            flush()
            out.append([stripped])
        else:
            if current and (stripped.startswith("|") != current[0].startswith("|") or stripped.startswith("- ")):
                flush()
            current.append(stripped)
    flush()
    return out


def table_rows(lines):
    """(case, metric, value) for every filled cell of a Markdown table."""
    header = cells(lines[0])
    body = [cells(line) for line in lines[2:]]
    keys = 1
    while keys < len(header) - 1 and len({tuple(row[:keys]) for row in body}) < len(body):
        keys += 1
    out = []
    for row in body:
        if keys == 1:
            case = row[0]
        else:
            case = ", ".join(f"{header[i]} {row[i]}" if header[i] else row[i] for i in range(keys))
        for metric, value in zip(header[keys:], row[keys:]):
            if value:
                out.append((case, metric, value))
    return out


def section_rows(name, section, run=None):
    """The CSV rows of one section: its run fields, every table cell, every paragraph holding a figure."""
    run = dict(run or {})
    rows, heading, lead = [], "", ""
    for block in blocks(section):
        first = block[0]
        if first.startswith("#"):
            heading = first.lstrip("#").strip() if first.startswith("###") else ""
            lead = ""
            continue
        if first.startswith("|"):
            if len(block) < 3:
                raise HistoryError(f"a table in the {name} section has no body row; fix it by hand, then rerun")
            table = "; ".join(part for part in (heading, lead) if part)
            rows += [(table, case, metric, value) for case, metric, value in table_rows(block)]
            lead = ""
            continue
        text = " ".join(block)
        field = re.match(r"- (Run|Commit|Machine|Load|Command): (.*)$", text)
        if field and not run.get(RUN_FIELDS[field.group(1)]):
            run[RUN_FIELDS[field.group(1)]] = field.group(2).strip().strip("`")
            continue
        if FIGURE.search(text):
            rows.append((heading, "", "text", text[2:] if text.startswith("- ") else text))
        # A paragraph ending in a colon introduces the table after it and names it.
        lead = re.split(r" \(|:", text)[0].strip() if text.endswith(":") else ""
    return [dict(benchmark=name, **{key: run.get(key, "") for key in COLUMNS[1:6]},
                 table=table, case=case, metric=metric, value=value) for table, case, metric, value in rows]


# ---------------------------------------------------------------------------------------------------------
# Recording a run


def render(name, title, run, body):
    start, end = markers(name)
    lines = [start, f"## {title}", ""]
    lines += [f"- {label}: " + (f"`{run[key]}`" if key == "command" else run[key])
              for label, key in RUN_FIELDS.items()]
    return "\n".join(lines + ["", body.strip("\n"), end]) + "\n"


def write_atomically(path, text):
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "w") as f:
        f.write(text)
    os.replace(temporary, path)


def append_rows(history, rows):
    new = not history.exists() or history.stat().st_size == 0
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    if new:
        writer.writeheader()
    writer.writerows(rows)
    with open(history, "a") as f:
        f.write(buffer.getvalue())


def record(name, title, run, body, benchmarks=None, history=None):
    """Puts a new run of benchmark `name` into BENCHMARKS.md, moving the run it replaces to the CSV first.

    `run` holds command, and optionally run_utc, commit, machine and load (measured here when absent);
    `body` is the Markdown under the run lines. Returns the number of rows moved.
    """
    benchmarks = Path(benchmarks or ROOT / "BENCHMARKS.md")
    history = Path(history or benchmarks.with_name("BENCHMARKS-history.csv"))
    if not run.get("command"):
        raise HistoryError("a run needs the command that reproduces it")
    if run.get("commit", "").endswith(DIRTY):
        raise HistoryError("the run was measured on a work tree with uncommitted changes, so no commit reproduces "
                           "it and BENCHMARKS.md is left as it was; commit the changes, or measure from a clean "
                           "checkout (git worktree add), then rerun")
    if not run.get("commit"):
        require_clean(benchmarks.parent)
    run = {"run_utc": run.get("run_utc") or now_utc(), "commit": run.get("commit") or commit(benchmarks.parent),
           "machine": run.get("machine") or machine(), "load": run.get("load") or load_average(),
           "command": run["command"]}
    text = benchmarks.read_text() if benchmarks.exists() else "# Benchmarks\n"
    start, end = markers(name)
    new = render(name, title, run, body)
    moved = []
    if start in text:
        if text.count(start) != 1 or end not in text.split(start, 1)[1]:
            raise HistoryError(f"BENCHMARKS.md has a broken {name} section (start and end markers must appear "
                               "once each, in order); fix it by hand, then rerun")
        head, rest = text.split(start, 1)
        old, tail = rest.split(end, 1)
        moved = section_rows(name, old)
        text = head + new + ("\n" + tail.lstrip("\n") if tail.strip() else "")
    else:
        text = text.rstrip("\n") + "\n\n" + new
    # The CSV first: interrupted between the two writes, the old run is in both files rather than in neither.
    if moved:
        append_rows(history, moved)
    write_atomically(benchmarks, text)
    return len(moved)


def main():
    parser = argparse.ArgumentParser(description="Prints the CSV rows a BENCHMARKS.md section on stdin would "
                                                 "become when a new run replaces it.")
    parser.add_argument("name", nargs="?", help="the benchmark's name, as in its markers")
    parser.add_argument("--require-clean", action="store_true",
                        help="only check that the work tree has no uncommitted changes a written run could not name")
    args = parser.parse_args()
    try:
        if args.require_clean:
            require_clean()
            return
        if not args.name:
            parser.error("the benchmark's name is needed")
        writer = csv.DictWriter(sys.stdout, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(section_rows(args.name, sys.stdin.read()))
    except HistoryError as error:
        print(f"bench/history: {error}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
