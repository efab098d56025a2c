"""Job-queue benchmark harness, run by scripts/bench/queue (which installs the peers and starts PostgreSQL).

Four systems, the same noop work, the same machine, one run, at durability full and normal:
  adapt       the real `adapt` executable (release build), its workers as separate processes, each running
              --concurrency jobs at once (group commit), and again one job at a time
  sqlite3     a plain Python queue: UPDATE … RETURNING inside BEGIN IMMEDIATE to claim, a second
              transaction to complete; WAL, synchronous FULL or NORMAL; idle workers poll every 1 ms
  huey        huey with its SqliteStorage (WAL; synchronous FULL or NORMAL), process workers, results kept,
              polling delay 1 ms
  postgres    a table claimed with SELECT … FOR UPDATE SKIP LOCKED, the row lock held while the job runs,
              completed in the same transaction; LISTEN/NOTIFY wakes idle workers; synchronous_commit on/off

Throughput is measured from the first job start to the last job end as recorded by the jobs themselves, so
process start-up is left out for every system alike. Latency is wall time from just before the enqueue
transaction to the first line of the job body.
"""
import argparse
import os
import pickle
import platform
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

import history

HERE = os.path.dirname(os.path.abspath(__file__))
NOTES = []
TITLE = "Job queue"


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def wait_for(condition, timeout, what):
    deadline = time.time() + timeout
    while not condition():
        if time.time() > deadline:
            raise TimeoutError(what)
        time.sleep(0.01)


# ---------------------------------------------------------------------------------------------- adapt

class Adapt:
    LATENCY_SQL = "SELECT json_extract(output, '$.start_latency_us') FROM jobs ORDER BY id"

    def __init__(self, binary, work, concurrency):
        self.binary, self.work, self.concurrency = binary, work, concurrency
        self.name = "adapt" if concurrency > 1 else "adapt, 1 at a time"

    def fresh(self, durability):
        self.durability = durability
        self.state = tempfile.mkdtemp(dir=self.work, prefix="adapt-")
        # Creates and migrates the database (a command that only reads refuses a missing state).
        subprocess.run(self.cmd("rescue"), check=True, stdout=subprocess.DEVNULL)

    def cmd(self, *args):
        return [self.binary, "--state", self.state, "--durability", self.durability, *args]

    def db(self):
        return sqlite3.connect(os.path.join(self.state, "adapt.sqlite"), timeout=30)

    def worker(self, *args):
        return self.cmd("worker", "--kinds", "noop", "--concurrency", str(self.concurrency), *args)

    def enqueue(self, n):
        # Timed by the microsecond stamps the enqueue loop puts in each job's input just before enqueueing it,
        # as drains are timed by the jobs' own records (the peers' enqueue loops run in this process, so no
        # process start-up is counted for them either). The runs' creation times have only millisecond steps.
        subprocess.run(self.cmd("enqueue", "noop", "--count", str(n), "--separate-runs"), check=True,
                       stdout=subprocess.DEVNULL)
        first, last = self.db().execute("SELECT min(json_extract(input, '$.enqueued_at_us')), "
                                        "max(json_extract(input, '$.enqueued_at_us')) FROM jobs").fetchone()
        return (n - 1) / max((last - first) / 1e6, 1e-6)

    def drain(self, n, workers):
        subprocess.run(self.cmd("enqueue", "noop", "--count", str(n)), check=True, stdout=subprocess.DEVNULL)
        procs = [subprocess.Popen(self.worker("--exit-when-idle"), stderr=subprocess.DEVNULL)
                 for _ in range(workers)]
        for p in procs:
            p.wait()
        first, last, done = self.db().execute(
            "SELECT min(at) FILTER (WHERE to_state = 'running'), max(at) FILTER (WHERE to_state = 'succeeded'), "
            "count(*) FILTER (WHERE to_state = 'succeeded') FROM job_events").fetchone()
        assert done == n, f"adapt finished {done} of {n}"
        return n / max((last - first) / 1000, 1e-3)

    def latency(self, count, interval_ms):
        worker = subprocess.Popen(self.worker(), stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        subprocess.run(self.cmd("enqueue", "noop", "--count", str(count), "--separate-runs", "--interval-ms",
                                str(interval_ms)), check=True, stdout=subprocess.DEVNULL)
        db = self.db()
        wait_for(lambda: db.execute("SELECT count(*) FROM jobs WHERE state = 'succeeded'").fetchone()[0] == count,
                 30, "adapt latency jobs")
        worker.send_signal(signal.SIGTERM)
        worker.wait()
        rows = db.execute(self.LATENCY_SQL).fetchall()
        return [r[0] / 1000 for r in rows]

    def kill_recovery(self, lease_ms):
        subprocess.run(self.cmd("enqueue", "noop", "--sleep-ms", "3000"), check=True, stdout=subprocess.DEVNULL)
        db = self.db()
        doomed = subprocess.Popen(self.worker("--lease-ms", str(lease_ms)), stderr=subprocess.DEVNULL)
        wait_for(lambda: db.execute("SELECT state FROM jobs").fetchone()[0] == "running", 10, "adapt claim")
        standby = subprocess.Popen(self.worker("--lease-ms", str(lease_ms)), stderr=subprocess.DEVNULL)
        time.sleep(0.3)
        doomed.kill()
        killed = time.time()
        doomed.wait()
        again = lambda: db.execute("SELECT at FROM job_events WHERE to_state = 'running' AND attempt = 2").fetchone()
        try:
            wait_for(lambda: again() is not None, 10, "adapt rescue")
            return again()[0] / 1000 - killed
        except TimeoutError:
            return None
        finally:
            standby.send_signal(signal.SIGINT)
            standby.send_signal(signal.SIGINT)
            standby.wait()


# ------------------------------------------------------------------------------------ python sqlite3

SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (id INTEGER PRIMARY KEY, state TEXT NOT NULL DEFAULT 'ready',
    priority INTEGER NOT NULL DEFAULT 0, run_at REAL NOT NULL, enqueued_at REAL NOT NULL,
    sleep_ms INTEGER NOT NULL DEFAULT 0, attempt INTEGER NOT NULL DEFAULT 0, started_at REAL, finished_at REAL);
CREATE INDEX IF NOT EXISTS jobs_ready ON jobs (priority, run_at, id) WHERE state = 'ready';
"""


def sqlite_connect(path, durability):
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=" + ("FULL" if durability == "full" else "NORMAL"))
    return conn


def sqlite_worker(path, durability, exit_when_empty, starts):
    conn = sqlite_connect(path, durability)
    while True:
        now = time.time()
        conn.execute("BEGIN IMMEDIATE")
        row = conn.execute(
            "UPDATE jobs SET state = 'running', attempt = attempt + 1 WHERE id IN "
            "(SELECT id FROM jobs WHERE state = 'ready' AND run_at <= ? ORDER BY priority, run_at, id LIMIT 1) "
            "RETURNING id, sleep_ms", (now,)).fetchone()
        conn.execute("COMMIT")
        if row is None:
            if exit_when_empty:
                return
            time.sleep(0.001)
            continue
        # The job starts once its claim is committed, as in the other systems.
        started = time.time()
        if row[1]:
            with open(starts, "a") as f:
                f.write(f"{started}\n")
            time.sleep(row[1] / 1000)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE jobs SET state = 'done', started_at = ?, finished_at = ? WHERE id = ?",
                     (started, time.time(), row[0]))
        conn.execute("COMMIT")


class PlainSqlite:
    name = "sqlite3"

    def __init__(self, work):
        self.work = work

    def fresh(self, durability):
        self.durability = durability
        folder = tempfile.mkdtemp(dir=self.work, prefix="sqlite-")
        self.path, self.starts = os.path.join(folder, "queue.db"), os.path.join(folder, "starts")
        self.conn = sqlite_connect(self.path, durability)
        self.conn.executescript(SQLITE_SCHEMA)

    def worker(self, exit_when_empty):
        return subprocess.Popen([sys.executable, __file__, "sqlite-worker", self.path, self.durability,
                                 "1" if exit_when_empty else "0", self.starts])

    def insert(self, sleep_ms=0):
        now = time.time()
        self.conn.execute("INSERT INTO jobs (run_at, enqueued_at, sleep_ms) VALUES (?, ?, ?)", (now, now, sleep_ms))

    def enqueue(self, n):
        start = time.perf_counter()
        for _ in range(n):
            self.insert()
        return n / (time.perf_counter() - start)

    def drain(self, n, workers):
        self.conn.execute("BEGIN")
        for _ in range(n):
            self.insert()
        self.conn.execute("COMMIT")
        for p in [self.worker(True) for _ in range(workers)]:
            p.wait()
        first, last, done = self.conn.execute(
            "SELECT min(started_at), max(finished_at), count(*) FROM jobs WHERE state = 'done'").fetchone()
        assert done == n, f"sqlite3 finished {done} of {n}"
        return n / (last - first)

    def latency(self, count, interval_ms):
        worker = self.worker(False)
        time.sleep(0.5)
        for i in range(count):
            if i:
                time.sleep(interval_ms / 1000)
            self.insert()
        wait_for(lambda: self.conn.execute("SELECT count(*) FROM jobs WHERE state = 'done'").fetchone()[0] == count,
                 30, "sqlite3 latency jobs")
        worker.kill()
        worker.wait()
        return [(r[0] - r[1]) * 1000 for r in self.conn.execute("SELECT started_at, enqueued_at FROM jobs ORDER BY enqueued_at")]

    def kill_recovery(self, lease_ms):
        return starts_again(self, lambda: self.insert(sleep_ms=3000))


def starts_again(system, enqueue_sleeper, timeout=5):
    """Enqueues one long job, kills the worker running it with SIGKILL (its whole process group), starts a
    new worker, and returns how long until the job starts again (None: not within `timeout` seconds)."""
    open(system.starts, "w").close()
    count = lambda: len(open(system.starts).read().split())
    enqueue_sleeper()
    doomed = system.worker(False)
    wait_for(lambda: count() == 1, 20, f"{system.name} first start")
    os.killpg(os.getpgid(doomed.pid), signal.SIGKILL) if getattr(system, "own_group", False) else doomed.kill()
    killed = time.time()
    doomed.wait()
    standby = system.worker(False)
    try:
        wait_for(lambda: count() == 2, timeout, f"{system.name} second start")
        return float(open(system.starts).read().split()[1]) - killed
    except TimeoutError:
        return None
    finally:
        if getattr(system, "own_group", False):
            os.killpg(os.getpgid(standby.pid), signal.SIGKILL)
        else:
            standby.kill()
        standby.wait()


# ----------------------------------------------------------------------------------------------- huey

HUEY_APP = '''
import os, time
from huey import Huey
from huey.storage import SqliteStorage

class Storage(SqliteStorage):
    def _create_connection(self):
        conn = super()._create_connection()
        conn.execute("pragma synchronous=%d" % (2 if os.environ["BENCH_DURABILITY"] == "full" else 1))
        return conn

huey = Huey("bench", storage_class=Storage, filename=os.environ["BENCH_DB"], results=True)

@huey.task()
def noop(enqueued_at, sleep_ms=0):
    started = time.time()
    if sleep_ms:
        with open(os.environ["BENCH_STARTS"], "a") as f:
            f.write("%r\\n" % started)
        time.sleep(sleep_ms / 1000)
    return [enqueued_at, started, time.time()]
'''


class HueyQueue:
    name = "huey"
    own_group = True

    def __init__(self, work, venv_bin):
        self.work, self.consumer = work, os.path.join(venv_bin, "huey_consumer")

    def fresh(self, durability):
        folder = tempfile.mkdtemp(dir=self.work, prefix="huey-")
        with open(os.path.join(folder, "bench_huey_app.py"), "w") as f:
            f.write(HUEY_APP)
        self.folder, self.db = folder, os.path.join(folder, "huey.db")
        self.starts = os.path.join(folder, "starts")
        self.env = dict(os.environ, BENCH_DB=self.db, BENCH_DURABILITY=durability, BENCH_STARTS=self.starts,
                        PYTHONPATH=folder)
        os.environ.update(BENCH_DB=self.db, BENCH_DURABILITY=durability, BENCH_STARTS=self.starts)
        sys.path.insert(0, folder)
        sys.modules.pop("bench_huey_app", None)
        import bench_huey_app
        self.app = bench_huey_app
        sys.path.remove(folder)

    def worker(self, exit_when_empty, workers=1):
        return subprocess.Popen([self.consumer, "bench_huey_app.huey", "-w", str(workers), "-k", "process", "-n",
                                 "-d", "0.001", "-m", "0.001", "-b", "1.0", "-q"], cwd=self.folder, env=self.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def results(self):
        conn = sqlite3.connect(self.db, timeout=30)
        return [pickle.loads(v) for (v,) in conn.execute("SELECT value FROM kv")]

    def result_count(self):
        return sqlite3.connect(self.db, timeout=30).execute("SELECT count(*) FROM kv").fetchone()[0]

    def enqueue(self, n):
        start = time.perf_counter()
        for _ in range(n):
            self.app.noop(time.time())
        return n / (time.perf_counter() - start)

    def drain(self, n, workers):
        for _ in range(n):
            self.app.noop(time.time())
        consumer = self.worker(True, workers)
        # Stop when all are done, or when nothing more finished for 20 s (huey's workers give up on a locked
        # database after its 5 s busy timeout; the tasks they held are then lost).
        done, last_change, last_done = 0, time.time(), -1
        while done < n and time.time() - last_change < 20:
            time.sleep(0.05)
            done = self.result_count()
            if done != last_done:
                last_change, last_done = time.time(), done
        os.killpg(os.getpgid(consumer.pid), signal.SIGKILL)
        consumer.wait()
        results = self.results()
        if len(results) < n:
            NOTES.append(f"huey, {os.environ['BENCH_DURABILITY']}, {workers} workers: {len(results):,} of {n:,} "
                         "tasks finished; the rest made no progress for 20 s (rate over the finished ones)")
        return len(results) / (max(r[2] for r in results) - min(r[1] for r in results))

    def latency(self, count, interval_ms):
        consumer = self.worker(False)
        try:
            time.sleep(1.5)
            for i in range(count):
                if i:
                    time.sleep(interval_ms / 1000)
                self.app.noop(time.time())
            wait_for(lambda: self.result_count() == count, 30, "huey latency jobs")
        finally:
            os.killpg(os.getpgid(consumer.pid), signal.SIGKILL)
            consumer.wait()
        return [(r[1] - r[0]) * 1000 for r in self.results()]

    def kill_recovery(self, lease_ms):
        return starts_again(self, lambda: self.app.noop(time.time(), sleep_ms=3000))


# ------------------------------------------------------------------------------------------ postgres

PG_SCHEMA = """
DROP TABLE IF EXISTS jobs;
CREATE TABLE jobs (id bigserial PRIMARY KEY, state text NOT NULL DEFAULT 'ready', priority int NOT NULL DEFAULT 0,
    run_at double precision NOT NULL, enqueued_at double precision NOT NULL, sleep_ms int NOT NULL DEFAULT 0,
    started_at double precision, finished_at double precision);
CREATE INDEX jobs_ready ON jobs (priority, run_at, id) WHERE state = 'ready';
"""


def pg_connect(dsn, durability):
    import psycopg
    conn = psycopg.connect(dsn, autocommit=True)
    conn.execute("SET synchronous_commit = " + ("on" if durability == "full" else "off"))
    return conn


def pg_worker(dsn, durability, exit_when_empty, starts):
    conn = pg_connect(dsn, durability)
    conn.execute("LISTEN jobs")
    while True:
        with conn.transaction():
            row = conn.execute("SELECT id, sleep_ms FROM jobs WHERE state = 'ready' AND run_at <= %s "
                               "ORDER BY priority, run_at, id FOR UPDATE SKIP LOCKED LIMIT 1", (time.time(),)).fetchone()
            if row is not None:
                started = time.time()
                if row[1]:
                    with open(starts, "a") as f:
                        f.write(f"{started}\n")
                    time.sleep(row[1] / 1000)
                conn.execute("UPDATE jobs SET state = 'done', started_at = %s, finished_at = %s WHERE id = %s",
                             (started, time.time(), row[0]))
                continue
        if exit_when_empty:
            return
        # Woken by NOTIFY; the timeout also finds rows unlocked by a dead worker's aborted transaction.
        for _ in conn.notifies(timeout=0.05, stop_after=1):
            pass


class Postgres:
    name = "postgres"

    def __init__(self, dsn, work):
        self.dsn, self.work = dsn, work

    def fresh(self, durability):
        self.durability = durability
        self.conn = pg_connect(self.dsn, durability)
        self.conn.execute(PG_SCHEMA)
        self.starts = tempfile.mktemp(dir=self.work, prefix="pg-starts-")

    def worker(self, exit_when_empty):
        return subprocess.Popen([sys.executable, __file__, "pg-worker", self.dsn, self.durability,
                                 "1" if exit_when_empty else "0", self.starts])

    def insert(self, sleep_ms=0):
        now = time.time()
        self.conn.execute("WITH j AS (INSERT INTO jobs (run_at, enqueued_at, sleep_ms) VALUES (%s, %s, %s) RETURNING id) "
                          "SELECT pg_notify('jobs', '') FROM j", (now, now, sleep_ms))

    def enqueue(self, n):
        start = time.perf_counter()
        for _ in range(n):
            self.insert()
        return n / (time.perf_counter() - start)

    def drain(self, n, workers):
        with self.conn.transaction():
            for _ in range(n):
                self.insert()
        for p in [self.worker(True) for _ in range(workers)]:
            p.wait()
        first, last, done = self.conn.execute(
            "SELECT min(started_at), max(finished_at), count(*) FROM jobs WHERE state = 'done'").fetchone()
        assert done == n, f"postgres finished {done} of {n}"
        return n / (last - first)

    def latency(self, count, interval_ms):
        worker = self.worker(False)
        time.sleep(0.5)
        for i in range(count):
            if i:
                time.sleep(interval_ms / 1000)
            self.insert()
        wait_for(lambda: self.conn.execute("SELECT count(*) FROM jobs WHERE state = 'done'").fetchone()[0] == count,
                 30, "postgres latency jobs")
        worker.kill()
        worker.wait()
        return [(r[0] - r[1]) * 1000 for r in self.conn.execute("SELECT started_at, enqueued_at FROM jobs ORDER BY enqueued_at")]

    def kill_recovery(self, lease_ms):
        return starts_again(self, lambda: self.insert(sleep_ms=3000))


# -------------------------------------------------------------------------------------------- report

def measure(systems, durability, jobs, enqueues, latency_jobs, lease_ms, rounds, log):
    # Throughput is the median of `rounds` rounds, each of which measures every system once, so a stretch of load
    # on this shared machine falls on all of them rather than on whichever ran then. Each round starts with the
    # next system, and every measurement starts with the disk written back (os.sync), so no system is always
    # the one that follows another's drain or pays for its writeback.
    samples = {system.name: {} for system in systems}
    for round in range(rounds):
        start = round % len(systems)
        for system in systems[start:] + systems[:start]:
            r = samples[system.name]
            system.fresh(durability)
            os.sync()
            r.setdefault("enqueue", []).append(system.enqueue(enqueues))
            for w in (1, 2, 4):
                system.fresh(durability)
                os.sync()
                r.setdefault(f"drain{w}", []).append(system.drain(jobs, w))
            log(f"{durability} round {round + 1} {system.name}: enqueue {r['enqueue'][-1]:.0f}/s, "
                + ", ".join(f"{w} worker(s) {r[f'drain{w}'][-1]:.0f} jobs/s" for w in (1, 2, 4)))
    rows = {}
    for system in systems:
        r = {key: statistics.median(values) for key, values in samples[system.name].items()}
        system.fresh(durability)
        lat = system.latency(latency_jobs, 10)
        r["p50"], r["p99"] = percentile(lat, 0.5), percentile(lat, 0.99)
        log(f"{durability} {system.name}: latency p50 {r['p50']:.2f} ms p99 {r['p99']:.2f} ms")
        system.fresh(durability)
        r["kill"] = system.kill_recovery(lease_ms)
        log(f"{durability} {system.name}: SIGKILL → running again {r['kill']}")
        rows[system.name] = r
    return rows


def table(rows, names, lease_ms):
    def f_rate(v): return f"{v:,.0f}"
    def f_ms(v): return f"{v:.2f}"
    def f_kill(v): return "not within 5 s" if v is None else f"{v * 1000:,.0f} ms"
    ours = [n for n in names if n.startswith("adapt")]
    lines = ["| metric | " + " | ".join(names) + " | " + " | ".join(f"{n} ÷ best peer" for n in ours) + " |",
             "|---" * (len(names) + len(ours) + 1) + "|"]
    spec = [("enqueue, jobs/s (one transaction each)", "enqueue", f_rate, max),
            ("claim+complete, jobs/s, 1 worker", "drain1", f_rate, max),
            ("claim+complete, jobs/s, 2 workers", "drain2", f_rate, max),
            ("claim+complete, jobs/s, 4 workers", "drain4", f_rate, max),
            ("enqueue→start p50, ms", "p50", f_ms, min),
            ("enqueue→start p99, ms", "p99", f_ms, min)]
    for label, key, fmt, best in spec:
        champion = best(rows[n][key] for n in names if n not in ours)
        ratios = [rows[n][key] / champion if best is max else champion / rows[n][key] for n in ours]
        lines.append(f"| {label} | " + " | ".join(fmt(rows[n][key]) for n in names) + " | "
                     + " | ".join(f"{r:.2f}×" for r in ratios) + " |")
    lines.append(f"| SIGKILL → job running again (adapt lease {lease_ms} ms) | "
                 + " | ".join(f_kill(rows[n]["kill"]) for n in names) + " |" + " |" * len(ours))
    return "\n".join(lines)


def load():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "sqlite-worker":
        return sqlite_worker(sys.argv[2], sys.argv[3], sys.argv[4] == "1", sys.argv[5])
    if len(sys.argv) > 1 and sys.argv[1] == "pg-worker":
        return pg_worker(sys.argv[2], sys.argv[3], sys.argv[4] == "1", sys.argv[5])
    parser = argparse.ArgumentParser()
    parser.add_argument("--adapt", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--pg", required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16, help="jobs each adapt worker process runs at once")
    parser.add_argument("--rounds", type=int, default=3, help="throughput is the median of this many rounds")
    parser.add_argument("--quick", action="store_true", help="small counts, to check the harness")
    parser.add_argument("--write", action="store_true", help="replace the queue section of BENCHMARKS.md")
    args = parser.parse_args()
    if args.write:
        history.exit_unless_clean("bench/queue", args.root)
    jobs, enqueues, latency_jobs, rounds = (300, 200, 30, 1) if args.quick else (args.jobs, 3000, 200, args.rounds)
    lease_ms = 1500
    log = lambda line: print(line, file=sys.stderr, flush=True)
    systems = [Adapt(args.adapt, args.work, args.concurrency), Adapt(args.adapt, args.work, 1), PlainSqlite(args.work),
               HueyQueue(args.work, os.path.dirname(sys.executable)), Postgres(args.pg, args.work)]
    names = [s.name for s in systems]
    started, load_before = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load()
    results = {d: measure(systems, d, jobs, enqueues, latency_jobs, lease_ms, rounds, log) for d in ("full", "normal")}
    load_after = load()
    import huey, psycopg
    pg_version = pg_connect(args.pg, "full").execute("SHOW server_version").fetchone()[0]
    command = ["scripts/bench/queue"] + (["--write"] if args.write else []) + (["--quick"] if args.quick else [])
    command += [f"--{name} {value}" for name, value, default in
                (("jobs", args.jobs, 2000), ("concurrency", args.concurrency, 16), ("rounds", args.rounds, 3))
                if value != default]
    run = {"run_utc": started, "commit": history.commit(args.root), "machine": history.machine(),
           "load": f"{load_before} before, {load_after} after", "command": " ".join(command)}
    report = [
        "adapt against a plain Python sqlite3 queue, huey and PostgreSQL, the systems interleaved in one run. "
        f"Peers: Python {platform.python_version()} sqlite3 "
        f"(SQLite {sqlite3.sqlite_version}), huey {huey.__version__}, PostgreSQL {pg_version} (psycopg "
        f"{psycopg.__version__}). {jobs:,} noop jobs per drain, {enqueues:,} single enqueues; throughput is the median of {rounds} interleaved rounds, each begun by the next system, every measurement after the disk is written back (`sync`). "
        f"{latency_jobs} jobs trickled 10 ms apart to one idle worker for latency.",
        "",
    ]
    for durability, rows in results.items():
        peers = ("synchronous=FULL; PostgreSQL synchronous_commit=on" if durability == "full"
                 else "synchronous=NORMAL; PostgreSQL synchronous_commit=off")
        report += [f"### durability {durability} ({peers})", "", table(rows, names, lease_ms), ""]
    if NOTES:
        report += ["Notes: " + "; ".join(NOTES) + ".", ""]
    report += [
        "How to read it: throughput runs from the first job start to the last job end as the jobs record them, and "
        "enqueue from the first job's enqueue to the last one's (adapt's by the microsecond stamps its enqueue loop "
        "puts in each job's input; the peers' enqueue loops run inside the harness), "
        "so no process start-up is counted for anyone; a job starts when its claim is committed (PostgreSQL's "
        "claim is its row lock, committed with the completion). "
        f"`adapt` runs {args.concurrency} jobs at once in each worker process (`adapt worker --concurrency "
        f"{args.concurrency}`) and commits the jobs that finish together in one transaction, which also claims "
        "their next jobs (group commit); `adapt, 1 at a time` is the same worker with `--concurrency 1`: one "
        "transaction per job (completion and next claim). The Python queue commits two per job (claim, "
        "complete), PostgreSQL one (the claim's row lock is held while the job runs), each worker one job at a "
        "time. adapt records more per job than the peers (a run row, an event per transition, lease and attempt "
        "columns, a lease index): a single enqueue writes more WAL pages (run, job, claim index, event, and the "
        "header page as the file grows) than the Python queue's (job, claim index), and so does a job one at a "
        "time in its one commit against the Python queue's two (the counts: BENCHMARKS.md, code choices). adapt "
        "creates its database with 1 KB pages, so those frames are a quarter of the peers' 4 KB (SQLite's "
        "default, which the peers keep); everyone writes them "
        "through SQLite's own file layer, two write calls per frame (its header, then its page). At durability "
        "normal, where a commit costs no fsync, an "
        "enqueue's cost is those calls, the six lock calls of every SQLite write transaction and SQLite's own work; "
        "the last is what puts adapt behind the Python queue there: five statements and four triggers over four "
        "B-trees against one insert over two, several times the instructions per enqueue (counted by callgrind: "
        "BENCHMARKS.md, code choices). "
        "Idle adapt workers are woken by inotify on the database folder and confirm with `PRAGMA data_version` "
        "(a read); the Python queue tries a claim every millisecond, huey polls every millisecond, PostgreSQL "
        "is woken by NOTIFY. A killed adapt worker's job runs again once its lease expires; the Python queue and huey "
        "have no lease, so a killed worker's job is never run again; PostgreSQL's job is freed as soon as the dead "
        "client's transaction is aborted.",
    ]
    body = "\n".join(report)
    print(history.render("queue", TITLE, run, body))
    if args.write:
        path = os.path.join(args.root, "BENCHMARKS.md")
        moved = history.record("queue", TITLE, run, body, benchmarks=path)
        log(f"wrote {path}; the run it replaced went to BENCHMARKS-history.csv ({moved} rows)")


if __name__ == "__main__":
    main()
