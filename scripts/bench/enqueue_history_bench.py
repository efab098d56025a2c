"""What recording a job's creation costs a single enqueue, run by scripts/bench/enqueue-history.

Three systems enqueue the same number of jobs, one transaction each, in alternating rounds on fresh databases:
  adapt                     the real `adapt enqueue noop --separate-runs` (run row, job, claim index, creation event)
  adapt, no creation event  the same binary on a database whose `jobs_created_event` trigger was dropped before
                            the first enqueue: a design alternative measured here, not something adapt offers
  sqlite3                   the plain Python queue of queue_bench.py (one insert over a table and its index)
Each round runs the three in turn after `sync`; a round's ratios compare systems measured seconds apart, and
the report gives the median (and range) of those ratios.
"""
import argparse
import os
import sqlite3
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import history  # noqa: E402
from queue_bench import Adapt, PlainSqlite, load  # noqa: E402

TITLE = "What a job's creation event costs a single enqueue"


class AdaptWithoutCreationEvent(Adapt):
    def __init__(self, binary, work):
        super().__init__(binary, work, 1)
        self.name = "adapt, no creation event"

    def fresh(self, durability):
        super().fresh(durability)
        with sqlite3.connect(os.path.join(self.state, "adapt.sqlite")) as db:
            db.execute("DROP TRIGGER jobs_created_event")


def microseconds_per_enqueue(system, durability, count):
    system.fresh(durability)
    os.sync()
    return 1e6 / system.enqueue(count)


def measure(systems, durability, count, rounds, log):
    times = {s.name: [] for s in systems}
    for round_number in range(rounds):
        for system in systems:
            times[system.name].append(microseconds_per_enqueue(system, durability, count))
        log(f"{durability} round {round_number + 1}: " +
            ", ".join(f"{name} {values[-1]:.1f} µs" for name, values in times.items()))
    return times


def table(times, peer):
    rows = [f"| system | µs per enqueue (median) | enqueues/s ÷ {peer}'s, per round: median (range) |", "|---|---|---|"]
    for name, values in times.items():
        ratios = sorted(p / v for p, v in zip(times[peer], values))
        spread = "" if name == peer else f"{statistics.median(ratios):.2f}× ({ratios[0]:.2f}–{ratios[-1]:.2f})"
        rows.append(f"| {name} | {statistics.median(values):.1f} | {spread} |")
    return "\n".join(rows)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--adapt", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--write", action="store_true", help="replace this benchmark's section of BENCHMARKS.md")
    args = parser.parse_args()
    if args.write:
        history.exit_unless_clean("bench/enqueue-history", args.root)
    log = lambda line: print(line, file=sys.stderr, flush=True)
    adapt = Adapt(args.adapt, args.work, 1)
    adapt.name = "adapt"
    systems = [adapt, AdaptWithoutCreationEvent(args.adapt, args.work), PlainSqlite(args.work)]
    counts = {"full": 2000, "normal": 5000}
    started, load_before = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load()
    results = {d: measure(systems, d, n, args.rounds, log) for d, n in counts.items()}
    command = "scripts/bench/enqueue-history" + (" --write" if args.write else "") + (
        f" --rounds {args.rounds}" if args.rounds != 8 else "")
    run = {"run_utc": started, "commit": history.commit(args.root), "machine": history.machine(),
           "load": f"{load_before} before, {load()} after", "command": command}
    report = [
        f"{args.rounds} rounds, each running the three systems in turn on fresh databases after `sync`: "
        f"{counts['full']:,} enqueues at durability full, {counts['normal']:,} at normal, one transaction each, "
        "timed as in `scripts/bench/queue`. `adapt, no creation event` is the same binary on a database whose "
        "trigger that records a job's creation was dropped first: a measured design alternative, not something "
        "adapt offers.",
        "",
    ]
    for durability, times in results.items():
        report += [f"### durability {durability}", "", table(times, "sqlite3"), ""]
    body = "\n".join(report)
    print(history.render("enqueue-history", TITLE, run, body))
    if args.write:
        moved = history.record("enqueue-history", TITLE, run, body, benchmarks=os.path.join(args.root, "BENCHMARKS.md"))
        log(f"wrote BENCHMARKS.md; the run it replaced went to BENCHMARKS-history.csv ({moved} rows)")


if __name__ == "__main__":
    main()
