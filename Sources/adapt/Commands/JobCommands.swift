import AdaptCore
import CommandLineKit
import CommandLineState
import Foundation
import Services

/// `adapt enqueue noop|run`, `worker`, `cancel`, `retry`, `rescue`, `prune-history`: the commands that change
/// the job table. The read-only ones (`runs`, `jobs`, `show`, `events`) are in JobCommands+Listing.swift.
enum JobCommands {
    static let all: [Command] = [enqueueNoop, enqueueRun, worker, runs, jobs, show, events, cancel, retry, rescue, prune]

    /// The job tables of `--database postgres://…` (or `ADAPT_DATABASE`), else of the state directory's database
    /// (created and migrated on first use).
    static func control(_ invocation: Invocation) throws -> JobControl {
        if let url = try GlobalOptions.postgresDatabase(invocation) { return try JobControl(postgres: url) }
        return try JobControl(database: try GlobalOptions.database(invocation))
    }

    /// The job tables of a command that only changes jobs already stored (cancel, retry, rescue, prune-history):
    /// on PostgreSQL, or in the state directory's database, which must exist (a mistyped --state is refused).
    static func existingControl(_ invocation: Invocation) throws -> JobControl {
        if let url = try GlobalOptions.postgresDatabase(invocation) { return try JobControl(postgres: url) }
        return try JobControl(database: try GlobalOptions.existingDatabase(invocation))
    }

    /// The job tables of a command that only reads: on PostgreSQL, or the state directory's database read-only
    /// (an error if the state does not exist).
    static func history(_ invocation: Invocation) throws -> JobHistory {
        if let url = try GlobalOptions.postgresDatabase(invocation) { return try JobHistory(postgres: url) }
        return try JobHistory(database: try GlobalOptions.readOnlyDatabase(invocation))
    }

    static let enqueueNoop = Command(
        "enqueue noop", summary: "enqueue a run of noop jobs (for tests, demos and benchmarks)",
        options: [Noop.count, Noop.sleep, Noop.failRate, Noop.maxAttempts, Noop.priority, Noop.uniqueKey, Noop.chain,
                  Noop.separateRuns, Noop.interval, .json]
    ) { invocation in
        let a = invocation.arguments
        let count = try a[Noop.count]
        let request = JobControl.NoopRequest(
            count: count, sleepMilliseconds: try a[Noop.sleep], failRate: try a[Noop.failRate],
            maxAttempts: try a[Noop.maxAttempts], priority: try a[Noop.priority], uniqueKey: try a[Noop.uniqueKey],
            chain: a[Noop.chain])
        if a[Noop.separateRuns] {
            guard !request.chain, request.uniqueKey == nil else {
                throw UsageError("--separate-runs makes independent runs; it does not combine with --chain or --unique-key")
            }
            let interval = try a[Noop.interval]
            let results = try await control(invocation).enqueueSeparateNoopRuns(request, intervalMilliseconds: interval)
            if a[.json] { Console.print(JSON.pretty(results)) } else { Console.print("enqueued \(count) runs of one noop job") }
            return
        }
        if a.given(Noop.interval) { throw UsageError("--interval-ms needs --separate-runs") }
        printEnqueued(try control(invocation).enqueueNoop(request), json: a[.json])
    }

    /// The options of `enqueue noop`.
    enum Noop {
        static let count = Option("count", default: 1, in: 1...10_000_000, help: "how many jobs")
        static let sleep = Option("sleep-ms", value: "MS", default: 0, in: 0...86_400_000, help: "each job waits this long")
        static let failRate = Option("fail-rate", value: "P", default: 0.0, in: 0...1,
                                     help: "probability in [0, 1] that an attempt fails (seeded per job)")
        static let maxAttempts = Option("max-attempts", default: RunDescription.defaultMaxAttempts, in: 1...1_000,
                                        help: "attempts before a job is discarded")
        static let priority = Option("priority", default: 0, in: -1_000_000...1_000_000, help: "lower runs first")
        static let uniqueKey = Option<String?>("unique-key", value: "K",
                                               help: "enqueue at most one run with this key; later calls return it")
        static let chain = Flag("chain", help: "make each job depend on the one before (a chain, for DAG demos)")
        static let separateRuns = Flag("separate-runs", help: "enqueue N runs of one job each, one transaction apiece (for benchmarks)")
        static let interval = Option("interval-ms", value: "MS", default: 0, in: 0...3_600_000,
                                     help: "with --separate-runs: pause between runs (a trickle, for latency)")
    }

    static let enqueueRun = Command(
        "enqueue run", summary: "enqueue a run described by a JSON file (- reads stdin)",
        discussion: """
            The file holds {"kind", "name"?, "unique_key"?, "manifest"?, "steps": [{"name", "kind", "input"?,
            "depends_on"?: [names], "priority"?, "max_attempts"?, "run_at"?: ms since the epoch, "lease_ms"?,
            "timeout_ms"?: how long each attempt may run before it fails as timed out}]}.
            Steps must form a DAG; an unknown field is refused; nothing is stored when the description is invalid.
            """,
        options: [.json],
        positionals: [PositionalSpec("FILE", help: "the run description (JSON), or - for stdin")]
    ) { invocation in
        let path = try invocation.arguments.required("FILE")
        let data: Data
        if path == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let contents = FileManager.default.contents(atPath: path) else {
                throw CoreError.fileUnreadable(path: path, reason: UnreadablePath.reason(path))
            }
            data = contents
        }
        let description = try JSON.decode(RunDescription.self, from: data, context: path == "-" ? "stdin" : path)
        try description.validate()
        printEnqueued(try control(invocation).enqueue(description), json: invocation.arguments.flag("json"))
    }

    static func printEnqueued(_ result: EnqueueResult, json: Bool) {
        if json { Console.print(JSON.pretty(result)); return }
        let jobs = result.jobIDs.count == 1 ? "1 job" : "\(result.jobIDs.count) jobs"
        Console.print(result.existing ? "\(result.runID) already exists (same unique key), \(jobs)"
                                      : "enqueued \(result.runID) with \(jobs)")
    }

    static let worker = Command(
        "worker", summary: "claim and run jobs until stopped (SIGINT/SIGTERM: finish the current job; twice: release it)",
        options: [Work.kinds, Work.exitWhenIdle, Work.lease, Work.concurrency, Work.poll, Work.timeout, Work.verbose, .json]
    ) { invocation in
        let a = invocation.arguments
        let kinds = try a[Work.kinds]
        guard !kinds.isEmpty else { throw UsageError("--kinds needs at least one job kind") }
        for kind in kinds where !JobControl.workerKinds.contains(kind) {
            throw UsageError("'adapt worker' cannot run '\(kind)' jobs (it runs \(JobControl.workerKinds.joined(separator: ", "))); "
                             + "pipeline steps run in their own adapt-<kind>-worker executables")
        }
        let verbose = a[Work.verbose]
        let request = JobControl.WorkerRequest(
            kinds: kinds, leaseMilliseconds: Int64(try a[Work.lease]), leaseOverridesJobs: a.given(Work.lease),
            concurrency: try a[Work.concurrency], exitWhenIdle: a[Work.exitWhenIdle], pollMicroseconds: try a[Work.poll])
        var timed = request
        timed.jobTimeoutMilliseconds = try a[Work.timeout]
        // A worker stores nothing of its own: a mistyped --state is refused instead of becoming an empty state that
        // never gets work (`StateAccess.waitingForWork`).
        let control = try GlobalOptions.postgresDatabase(invocation).map { try JobControl(postgres: $0) }
            ?? JobControl(database: try GlobalOptions.workerDatabase(invocation))
        let (owner, summary) = try await control.work(timed) { line in
            if verbose || !(line.hasPrefix("claimed ") || line.hasPrefix("completed ")) { Console.error("worker: \(line)") }
        }
        if a[.json] {
            Console.print(JSON.pretty(summary))
        } else {
            Console.error("worker \(owner): \(summary.succeeded) succeeded, \(summary.failed) failed (will retry), "
                          + "\(summary.discarded) discarded, \(summary.cancelled) cancelled, \(summary.released) released, "
                          + "\(summary.leaseLost) lost their lease; \(summary.commits) commits")
        }
    }

    /// The options of `worker`.
    enum Work {
        static let kinds = Option<[String]>(
            "kinds", value: "K[,K]", default: [],
            help: "job kinds to claim (this executable runs: \(JobControl.workerKinds.joined(separator: ", ")))"
        ) { text in text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }
        static let exitWhenIdle = Flag("exit-when-idle", help: "exit once no job of these kinds is ready, running or due within two minutes (later runs are not waited for)")
        static let lease = Option("lease-ms", value: "MS", default: 30_000, in: ClaimRequest.leaseRange,
                                  help: "lease length, for every job when given (else the job's own lease_ms); heartbeats every third of it")
        static let concurrency = Option("concurrency", default: 1, in: 1...256,
                                        help: "jobs run at once in this process; jobs finishing together share one commit")
        static let poll = Option("poll-us", value: "US", default: 1_000, in: 50...1_000_000,
                                 help: "where inotify is unavailable: how often an idle worker looks for commits")
        static let verbose = Flag("verbose", help: "log every claim and completion on stderr")
        static let timeout = Option<Int64?>(
            "timeout-ms", value: "MS", default: nil,
            help: "fail an attempt running longer as 'timed out' (retried by its policy), for jobs without a timeout_ms of their own; a body deaf to it for 30 s more ends the worker (exit 3)"
        ) { text in
            guard let milliseconds = Int64(text), (1...604_800_000).contains(milliseconds) else {
                throw UsageError("must be a whole number of milliseconds from 1 to 604800000 (7 days), got \(text)")
            }
            return milliseconds
        }
    }

    static let cancel = Command(
        "cancel", summary: "cancel a run: jobs not yet running are cancelled, running ones stop at their next heartbeat",
        options: [.json], positionals: [PositionalSpec("RUN", help: "run id (run-N or N)")]
    ) { invocation in
        let id = try runID(invocation.arguments.required("RUN"), option: "RUN")
        let outcome = try existingControl(invocation).cancel(run: id)
        if invocation.arguments.flag("json") { Console.print(JSON.pretty(outcome)); return }
        if outcome.cancelled == 0 && outcome.running == 0 {
            Console.print("\(id) has no unfinished jobs; nothing to cancel")
        } else {
            Console.print("cancelled \(outcome.cancelled) job(s) of \(id); \(outcome.running) running job(s) will stop at their next heartbeat")
        }
    }

    static let retry = Command(
        "retry", summary: "run a discarded, cancelled or failed job again (and its cancelled dependents)",
        options: [.json], positionals: [PositionalSpec("JOB", help: "job id (job-N or N)")]
    ) { invocation in
        let text = try invocation.arguments.required("JOB")
        guard let id = JobID.parse(text) else { throw UsageError("JOB expects a job id like job-3, got '\(text.prefix(40))'") }
        let outcome = try existingControl(invocation).retry(job: id)
        if invocation.arguments.flag("json") { Console.print(JSON.pretty(outcome)); return }
        Console.print("\(id) is \(outcome.state) again; \(outcome.dependents) cancelled dependent(s) back to pending")
    }

    static let rescue = Command(
        "rescue", summary: "put jobs whose lease expired back to ready (workers also do this by themselves)",
        options: [.json]
    ) { invocation in
        let rescued = try existingControl(invocation).rescueExpiredLeases()
        if invocation.arguments.flag("json") { Console.print(JSON.pretty(rescued)); return }
        if rescued.isEmpty { Console.print("no expired leases"); return }
        for r in rescued { Console.print("\(r.job): attempt \(r.attempt) lost its lease → \(r.state)") }
    }

    static let prune = Command(
        "prune-history", summary: "delete finished runs (with their jobs and events) older than DAYS, then run gc",
        discussion: """
            With --keep-versions N it then runs 'adapt registry prune --keep N' for every lineage: the runs just             deleted no longer hold their incumbents' adapter files, so the registry stops growing by one file a             night. Both reports go to stderr; --json prints the history's {runs, jobs, events}.
            """,
        options: [olderThan, keepVersions, .json]
    ) { invocation in
        let days = try invocation.arguments.required(olderThan)
        let keep = try invocation.arguments[keepVersions]
        // The pruned runs owned blobs (snapshots, adapters, checkpoints): what nothing owns now is collected. Its
        // report goes to stderr, so the command's own output keeps its shape.
        let (outcome, collected) = try existingControl(invocation).pruneHistory(olderThanDays: days) {
            try GlobalOptions.stateDirectory(invocation).blobs
        }
        Console.error("gc: " + GCCommand.describe(collected))
        if let keep {
            let registry = try RegistryCommands.existingRegistry(invocation)
            for (lineage, report) in try RegistryService.pruneEveryLineage(registry, keep: keep, dryRun: false) {
                Console.error("registry prune: " + RegistryPruneCommand.describe(report, lineage: lineage.value))
            }
        }
        if invocation.arguments.flag("json") { Console.print(JSON.pretty(outcome)); return }
        Console.print("pruned \(outcome.runs) run(s), \(outcome.jobs) job(s), \(outcome.events) event(s)")
    }

    static let keepVersions = Option<Int?>("keep-versions", value: "N", default: nil,
                                           help: "then delete the adapter files of every lineage but its newest N versions "
                                               + "(and the active chain, and what kept runs replay)") { text in
        try RegistryPruneCommand.keep.value(of: text)
    }

    static let olderThan = Option<Double?>("older-than", value: "DAYS", default: nil,
                                           help: "age of the run's last change, in days (0 prunes every finished run)") { text in
        let days = try OptionParsing.number(text)
        guard days >= 0 else { throw UsageError("must not be negative, got \(days)") }
        return days
    }

    // MARK: Identifiers

    static func runID(_ text: String, option: String) throws -> RunID {
        guard let id = RunID.parse(text) else { throw UsageError("\(option) expects a run id like run-3, got '\(text.prefix(40))'") }
        return id
    }

    static func jobID(_ text: String, option: String) throws -> JobID {
        guard let id = JobID.parse(text) else { throw UsageError("\(option) expects a job id like job-3, got '\(text.prefix(40))'") }
        return id
    }
}
