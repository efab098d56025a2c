"""Job-queue benchmark on PostgreSQL (issue 22), run by `scripts/bench/queue --backend postgres`, which installs
the peers and starts one throwaway PostgreSQL server (fsync on, synchronous_commit on) for all of them.

Three systems, the same noop work, one server, one run:
  adapt        the real `adapt` executable (release build) with `--database postgres://…`, its workers separate
               processes, each running --concurrency jobs at once (group commit), and again one job at a time
  plain        the harness's plain Python queue (queue_bench.Postgres): SELECT … FOR UPDATE SKIP LOCKED, the row
               lock held while the job runs, completed in the same transaction; LISTEN/NOTIFY wakes idle workers
  pgqueuer     PgQueuer from PyPI (psycopg driver), its QueueManager in drain mode, default batch size

Each system gets a database of its own on the server. Throughput is N jobs over the time from the first job start
(as the job bodies record it) to the last completion written to the database (adapt: its `succeeded` events;
plain: its finished_at column; pgqueuer, which writes completions in buffered batches after the bodies: the
moment the harness, polling every 2 ms, finds its queue table empty). Latency is wall time from just before the
enqueue transaction to the first line of the job body, 10 ms apart, to one idle worker.
"""
import argparse
import asyncio
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import history
from queue_bench import Adapt, Postgres, load, percentile, pg_connect, wait_for

TITLE = "Job queue on PostgreSQL"
WORKERS = (1, 2, 4, 8)


class Databases:
    """Fresh databases on the one server, each system's own, named in order."""

    def __init__(self, admin_dsn, socket_dir, port, user):
        self.admin = pg_connect(admin_dsn, "full")
        self.socket_dir, self.port, self.user = socket_dir, port, user
        self.count = 0

    def fresh(self, prefix):
        self.count += 1
        name = f"{prefix}_{self.count}"
        self.admin.execute(f"DROP DATABASE IF EXISTS {name}")
        self.admin.execute(f"CREATE DATABASE {name}")
        return name

    def dsn(self, name):
        return f"host={self.socket_dir} port={self.port} user={self.user} dbname={name}"

    def url(self, name):
        return f"postgresql://{self.user}@/{name}?host={self.socket_dir}&port={self.port}"

    def settle(self, timeout=30):
        """Waits for the server to finish what earlier measurements left it (autovacuum of the drained databases,
        then a checkpoint, then the disk written back), so a latency measurement does not meet another system's
        after-effects: whoever came first after the drains met them all."""
        deadline = time.time() + timeout
        busy = "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'"
        while self.admin.execute(busy).fetchone()[0] > 0 and time.time() < deadline:
            time.sleep(0.1)
        self.admin.execute("CHECKPOINT")
        os.sync()


# ---------------------------------------------------------------------------------------------- adapt

class AdaptPg(Adapt):
    """queue_bench.Adapt with `--database postgres://…` instead of a state directory: the same drain and latency."""
    LATENCY_SQL = "SELECT (output::jsonb ->> 'start_latency_us')::bigint FROM jobs ORDER BY id"

    def __init__(self, binary, databases, concurrency):
        super().__init__(binary, None, concurrency)
        self.databases = databases

    def fresh(self):
        name = self.databases.fresh("adapt")
        self.url, self.conn = self.databases.url(name), pg_connect(self.databases.dsn(name), "full")
        subprocess.run(self.cmd("rescue"), check=True, stdout=subprocess.DEVNULL)  # creates the tables

    def cmd(self, *args):
        return [self.binary, "--database", self.url, *args]

    def db(self):
        return self.conn


# ---------------------------------------------------------------------------------------- plain Python

class PlainPg(Postgres):
    name = "plain SKIP LOCKED"

    def __init__(self, databases, work):
        self.databases = databases
        super().__init__(None, work)

    def fresh(self):
        self.dsn = self.databases.dsn(self.databases.fresh("plain"))
        super().fresh("full")


# -------------------------------------------------------------------------------------------- pgqueuer

async def pgqueuer_worker(dsn, drain, starts):
    import psycopg
    from pgqueuer import PsycopgDriver, Queries, QueueManager
    from pgqueuer.types import QueueExecutionMode
    connection = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    manager = QueueManager(Queries(PsycopgDriver(connection)))
    out = open(starts, "a", buffering=1)

    @manager.entrypoint("noop")
    async def noop(job):
        out.write(f"{time.time()} {job.payload.decode()}\n")

    await manager.run(mode=QueueExecutionMode.drain if drain else QueueExecutionMode.continuous)


class PgQueuerSystem:
    name = "pgqueuer"

    def __init__(self, databases, work):
        self.databases, self.work = databases, work
        self.loop = asyncio.new_event_loop()

    def fresh(self):
        import psycopg
        from pgqueuer import PsycopgDriver, Queries
        self.dsn = self.databases.dsn(self.databases.fresh("pgq"))
        self.conn = pg_connect(self.dsn, "full")
        self.starts = tempfile.mktemp(dir=self.work, prefix="pgq-starts-")

        async def connect():
            connection = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True)
            queries = Queries(PsycopgDriver(connection))
            await queries.install()
            return queries
        self.queries = self.loop.run_until_complete(connect())

    def enqueue(self, n):
        payloads = [str(time.time()).encode() for _ in range(n)]
        self.loop.run_until_complete(self.queries.enqueue(["noop"] * n, payloads, [0] * n))

    def enqueue_one(self):
        self.loop.run_until_complete(self.queries.enqueue("noop", str(time.time()).encode(), 0))

    def worker(self, drain):
        return subprocess.Popen([sys.executable, __file__, "pgqueuer-worker", self.dsn, "1" if drain else "0", self.starts])

    def started(self):
        try:
            return [tuple(map(float, line.split())) for line in open(self.starts)]
        except FileNotFoundError:
            return []

    def drain(self, n, workers):
        self.enqueue(n)
        procs = [self.worker(True) for _ in range(workers)]
        emptied = None
        while emptied is None:
            if self.conn.execute("SELECT count(*) FROM pgqueuer").fetchone()[0] == 0:
                emptied = time.time()
            else:
                time.sleep(0.002)
        for p in procs:
            p.wait()
        starts = self.started()
        assert len(starts) == n, f"pgqueuer ran {len(starts)} of {n}"
        return n / (emptied - min(s for s, _ in starts))

    def latency(self, count, interval_ms):
        worker = self.worker(False)
        time.sleep(1.0)
        for i in range(count):
            if i:
                time.sleep(interval_ms / 1000)
            self.enqueue_one()
        wait_for(lambda: len(self.started()) == count, 30, "pgqueuer latency jobs")
        worker.send_signal(signal.SIGINT)
        try:
            worker.wait(timeout=10)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
        return [(start - enqueued) * 1000 for start, enqueued in sorted(self.started(), key=lambda pair: pair[1])]


# ----------------------------------------------------------------------------------------------- floor

def notify_floor(databases, work, count, interval_ms):
    """The least enqueue→start can take on this server and machine now: scripts/bench/notify_floor.c (libpq, one
    thread) commits an insert with a NOTIFY on one connection and receives it on another, which then commits an
    update of the row. Latencies in ms, to the arrival and to the update's commit, as two lists."""
    binary = os.path.join(work, "notify_floor")
    if not os.path.exists(binary):  # the run's fresh work directory: built once, measured in every latency round
        include = subprocess.run(["pg_config", "--includedir"], capture_output=True, text=True).stdout.strip()
        subprocess.run(["cc", "-O2", os.path.join(os.path.dirname(os.path.abspath(__file__)), "notify_floor.c"),
                        f"-I{include or '/usr/include/postgresql'}", "-lpq", "-o", binary], check=True)
    out = subprocess.run([binary, databases.dsn(databases.fresh("floor")), str(count), str(interval_ms)],
                         check=True, capture_output=True, text=True).stdout
    pairs = [line.split() for line in out.splitlines()]
    return [float(a) for a, _ in pairs], [float(b) for _, b in pairs]


# -------------------------------------------------------------------------------------------- report

def measure(systems, databases, work, jobs, latency_jobs, rounds, log):
    # Rounds interleave the systems, each round begun by the next one, so a stretch of load on this shared
    # machine falls on all of them; throughput is the median over the rounds.
    samples = {system.name: {} for system in systems}
    for round in range(rounds):
        start = round % len(systems)
        for system in systems[start:] + systems[:start]:
            r = samples[system.name]
            for w in WORKERS:
                system.fresh()
                os.sync()
                r.setdefault(f"drain{w}", []).append(system.drain(jobs, w))
            log(f"round {round + 1} {system.name}: "
                + ", ".join(f"{w} worker(s) {r[f'drain{w}'][-1]:.0f} jobs/s" for w in WORKERS))
    # Latency: as many rounds, the floor among the systems, each round begun by the next, each measurement on a
    # settled server; percentiles over the pooled samples.
    # Each measurement's first job is left out of the pool and reported on its own: it is the first enqueue of a
    # fresh session (adapt's `enqueue` process, the peers' new connections), which pays the server's one-time
    # setup (catalog caches, PL/pgSQL compiled, first plans) and says nothing of how fast an idle worker wakes.
    # Every latency list is in enqueue order.
    latencies = {system.name: [] for system in systems}
    firsts = {system.name: [] for system in systems}
    floor, durable = [], []
    takers = systems + [None]
    for round in range(rounds):
        start = round % len(takers)
        for system in takers[start:] + takers[:start]:
            if system is None:
                databases.settle()
                arrived, committed = notify_floor(databases, work, latency_jobs + 1, 10)
                floor += arrived[1:]
                durable += committed[1:]
                continue
            system.fresh()
            databases.settle()
            first, *lat = system.latency(latency_jobs + 1, 10)
            latencies[system.name] += lat
            firsts[system.name].append(first)
            log(f"round {round + 1} {system.name}: latency p50 {percentile(lat, 0.5):.2f} ms "
                f"p99 {percentile(lat, 0.99):.2f} ms; the session's first {first:.2f} ms")
    rows = {}
    for system in systems:
        r = {key: statistics.median(values) for key, values in samples[system.name].items()}
        lat = latencies[system.name]
        r["p50"], r["p99"] = percentile(lat, 0.5), percentile(lat, 0.99)
        r["first"] = statistics.median(firsts[system.name])
        log(f"{system.name}: latency p50 {r['p50']:.2f} ms p99 {r['p99']:.2f} ms over {len(lat)} jobs")
        rows[system.name] = r
    return rows, floor, durable


def table(rows, names):
    ours = [n for n in names if n.startswith("adapt")]
    lines = ["| metric | " + " | ".join(names) + " | " + " | ".join(f"{n} ÷ best peer" for n in ours) + " |",
             "|---" * (len(names) + len(ours) + 1) + "|"]
    spec = [(f"claim+complete, jobs/s, {w} worker{'s' if w > 1 else ''}", f"drain{w}", lambda v: f"{v:,.0f}", max)
            for w in WORKERS]
    spec += [("enqueue→start p50, ms", "p50", lambda v: f"{v:.2f}", min),
             ("enqueue→start p99, ms", "p99", lambda v: f"{v:.2f}", min),
             ("a session's first enqueue→start, ms (median)", "first", lambda v: f"{v:.2f}", min)]
    for label, key, fmt, best in spec:
        champion = best(rows[n][key] for n in names if n not in ours)
        ratios = [rows[n][key] / champion if best is max else champion / rows[n][key] for n in ours]
        lines.append(f"| {label} | " + " | ".join(fmt(rows[n][key]) for n in names) + " | "
                     + " | ".join(f"{r:.2f}×" for r in ratios) + " |")
    return "\n".join(lines)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "pgqueuer-worker":
        return asyncio.run(pgqueuer_worker(sys.argv[2], sys.argv[3] == "1", sys.argv[4]))
    parser = argparse.ArgumentParser()
    parser.add_argument("--adapt", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--socket-dir", required=True)
    parser.add_argument("--port", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16, help="jobs each adapt worker process runs at once")
    parser.add_argument("--rounds", type=int, default=3, help="throughput is the median of this many rounds")
    parser.add_argument("--quick", action="store_true", help="small counts, to check the harness")
    parser.add_argument("--write", action="store_true", help="replace the PostgreSQL queue section of BENCHMARKS.md")
    args = parser.parse_args()
    if args.write:
        history.exit_unless_clean("bench/queue-postgres", args.root)
    jobs, latency_jobs, rounds = (300, 30, 1) if args.quick else (args.jobs, 200, args.rounds)
    log = lambda line: print(line, file=sys.stderr, flush=True)
    databases = Databases(f"host={args.socket_dir} port={args.port} user={args.user} dbname={args.user}",
                          args.socket_dir, args.port, args.user)
    systems = [AdaptPg(args.adapt, databases, args.concurrency), AdaptPg(args.adapt, databases, 1),
               PlainPg(databases, args.work), PgQueuerSystem(databases, args.work)]
    names = [s.name for s in systems]
    started, load_before = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load()
    rows, floor, durable = measure(systems, databases, args.work, jobs, latency_jobs, rounds, log)
    floor_p50, floor_p99 = percentile(floor, 0.5), percentile(floor, 0.99)
    durable_p50, durable_p99 = percentile(durable, 0.5), percentile(durable, 0.99)
    log(f"floor (insert+NOTIFY commit → received): p50 {floor_p50:.2f} ms p99 {floor_p99:.2f} ms; "
        f"then a claim committed: p50 {durable_p50:.2f} ms p99 {durable_p99:.2f} ms")
    load_after = load()
    import pgqueuer
    import psycopg
    pg_version = databases.admin.execute("SHOW server_version").fetchone()[0]
    command = ["scripts/bench/queue --backend postgres"] + (["--write"] if args.write else []) + (["--quick"] if args.quick else [])
    command += [f"--{name} {value}" for name, value, default in
                (("jobs", args.jobs, 2000), ("concurrency", args.concurrency, 16), ("rounds", args.rounds, 3))
                if value != default]
    run = {"run_utc": started, "commit": history.commit(args.root), "machine": history.machine(),
           "load": f"{load_before} before, {load_after} after", "command": " ".join(command)}
    body = "\n".join([
        f"adapt's job engine on PostgreSQL against the harness's plain SKIP LOCKED queue and PgQueuer, on one "
        f"PostgreSQL {pg_version} server (fsync on, synchronous_commit on; each system its own database), the "
        f"systems interleaved in one run. Peers: Python {platform.python_version()}, psycopg {psycopg.__version__}, "
        f"PgQueuer {pgqueuer.__version__}. {jobs:,} noop jobs per drain, throughput the median of {rounds} "
        f"interleaved rounds; latency over {rounds} rounds of {latency_jobs} jobs trickled 10 ms apart to one idle "
        f"worker, pooled ({rounds * latency_jobs} per system), after each round's first job, which is reported on its "
        "own: the first enqueue of a fresh session pays the server's one-time setup of it.",
        "",
        table(rows, names),
        "",
        "How to read it: throughput runs from the first job start to the last completion the database holds (see "
        "scripts/bench/queue_pg_bench.py), so no process start-up is counted. "
        f"`adapt` runs {args.concurrency} jobs at once per worker process and commits the jobs that finish together "
        "in one transaction that also claims their next jobs (group commit); `adapt, 1 at a time` is "
        "`--concurrency 1`: one transaction per job (completion and next claim) plus the claim's own when idle. "
        "The plain queue holds the row lock while the job runs and completes in the same transaction: one commit "
        "per job, nothing recorded but a state and two times. PgQueuer dequeues in batches (10 by default) and "
        "writes completions in buffered batches. adapt records more per job than either: a run row, an event per "
        "transition (by trigger), lease, attempt and fencing columns, all checked by constraints. Idle workers of "
        "all three are woken by NOTIFY; an adapt worker whose slots wait is also handed a new job, already claimed, "
        "by the enqueue's own transaction. "
        "Before each latency measurement the server is left to finish its autovacuum work, checkpointed and the "
        "disk written back, and the rounds rotate the order, so no system meets what another's drains left behind. "
        f"The floor, measured in the same rounds on the same server: a libpq client's insert+NOTIFY reached "
        f"a second connection p50 {floor_p50:.2f} ms, p99 {floor_p99:.2f} ms after its commit was sent "
        f"(scripts/bench/notify_floor.c, {rounds} × {latency_jobs} × 10 ms, one thread, no job table): what any of the three "
        "could reach at best on this machine at this load. When the receiving connection then commits an update of "
        f"the row, as a claim that is durable before its job starts must, that commit returned p50 {durable_p50:.2f} "
        f"ms, p99 {durable_p99:.2f} ms after the enqueue's commit was sent: the floor of PgQueuer's enqueue→start, "
        "which commits its claim first (the plain queue starts under an uncommitted row lock, and adapt's claim "
        "commits with the enqueue).",
    ])
    print(history.render("queue-postgres", TITLE, run, body))
    if args.write:
        path = os.path.join(args.root, "BENCHMARKS.md")
        moved = history.record("queue-postgres", TITLE, run, body, benchmarks=path)
        log(f"wrote {path}; the run it replaced went to BENCHMARKS-history.csv ({moved} rows)")


if __name__ == "__main__":
    main()
