import AdaptCore
import CommandLineKit
import Foundation
import JobQueue
import Steps
import Storage
import WorkerRuntime

/// `adapt enqueue noop|run`, `worker`, `cancel`, `retry`, `rescue`, `prune-history`: the commands that change
/// the job table. The read-only ones (`runs`, `jobs`, `show`, `events`) are in JobCommands+Listing.swift.
enum JobCommands {
    static let all: [Command] = [enqueueNoop, enqueueRun, worker, runs, jobs, show, events, cancel, retry, rescue, prune]

    /// Opens the job engine on the state directory's database (creating and migrating it on first use).
    static func queue(_ invocation: Invocation) throws -> JobQueue {
        try JobQueue(database: try GlobalOptions.database(invocation))
    }

    /// The job engine of a command that only reads: read-only, and an error if the state does not exist.
    static func readingQueue(_ invocation: Invocation) throws -> JobQueue {
        try JobQueue(database: try GlobalOptions.readOnlyDatabase(invocation))
    }

    /// The job kinds `adapt worker` can run; the pipeline steps have their own worker executables.
    static let handlers: [String: JobBody] = [NoopJob.kind: NoopJob.body]

    static let enqueueNoop = Command(
        "enqueue noop", summary: "enqueue a run of noop jobs (for tests, demos and benchmarks)",
        options: [
            OptionSpec("count", value: "N", help: "how many jobs (default 1)"),
            OptionSpec("sleep-ms", value: "MS", help: "each job waits this long (default 0)"),
            OptionSpec("fail-rate", value: "P", help: "probability in [0, 1] that an attempt fails (seeded per job)"),
            OptionSpec("max-attempts", value: "N", help: "attempts before a job is discarded (default 3)"),
            OptionSpec("priority", value: "N", help: "lower runs first (default 0)"),
            OptionSpec("unique-key", value: "K", help: "enqueue at most one run with this key; later calls return it"),
            .flag("chain", help: "make each job depend on the one before (a chain, for DAG demos)"),
            .flag("separate-runs", help: "enqueue N runs of one job each, one transaction apiece (for benchmarks)"),
            OptionSpec("interval-ms", value: "MS", help: "with --separate-runs: pause between runs (a trickle, for latency)"),
            .json,
        ]
    ) { invocation in
        let a = invocation.arguments
        let count = try a.int("count", default: 1, in: 1...10_000_000)
        let sleep = try a.int("sleep-ms", default: 0, in: 0...86_400_000)
        let failRate = try a.double("fail-rate") ?? 0
        guard (0...1).contains(failRate) else { throw UsageError("--fail-rate must be between 0 and 1, got \(failRate)") }
        let maxAttempts = try a.int("max-attempts", default: RunDescription.defaultMaxAttempts, in: 1...1_000)
        let priority = try a.int("priority", default: 0, in: -1_000_000...1_000_000)
        let input = NoopJob.input(sleepMilliseconds: sleep, failRate: failRate)
        if a.flag("separate-runs") {
            guard !a.flag("chain"), !a.has("unique-key") else {
                throw UsageError("--separate-runs makes independent runs; it does not combine with --chain or --unique-key")
            }
            let interval = try a.int("interval-ms", default: 0, in: 0...3_600_000)
            let queue = try queue(invocation)
            var results: [EnqueueResult] = []
            for i in 1...count {
                if i > 1 && interval > 0 { try await Task.sleep(for: .milliseconds(interval)) }
                // The enqueue time in microseconds, for the noop body to report its start latency.
                var stamped = input.objectValue ?? [:]
                stamped["enqueued_at_us"] = .int(Int((Date().timeIntervalSince1970 * 1e6).rounded()))
                results.append(try queue.enqueue(RunDescription(kind: "noop", name: "noop", steps: [
                    .init(name: "noop", kind: NoopJob.kind, input: .object(stamped), priority: priority, maxAttempts: maxAttempts)])))
            }
            if a.flag("json") { Console.print(JSON.pretty(results)) } else { Console.print("enqueued \(count) runs of one noop job") }
            return
        }
        if a.has("interval-ms") { throw UsageError("--interval-ms needs --separate-runs") }
        let width = String(count).count
        func name(_ i: Int) -> String { "noop-" + String(repeating: "0", count: width - String(i).count) + String(i) }
        let steps = (1...count).map { i in
            RunDescription.Step(name: name(i), kind: NoopJob.kind, input: input,
                                dependsOn: a.flag("chain") && i > 1 ? [name(i - 1)] : [],
                                priority: priority, maxAttempts: maxAttempts)
        }
        let description = RunDescription(kind: "noop", name: "\(count) noop job\(count == 1 ? "" : "s")",
                                         uniqueKey: a.string("unique-key"),
                                         manifest: .object(["count": .int(count), "chain": .bool(a.flag("chain"))]),
                                         steps: steps)
        printEnqueued(try queue(invocation).enqueue(description), json: a.flag("json"))
    }

    static let enqueueRun = Command(
        "enqueue run", summary: "enqueue a run described by a JSON file (- reads stdin)",
        discussion: """
            The file holds {"kind", "name"?, "unique_key"?, "manifest"?, "steps": [{"name", "kind", "input"?,
            "depends_on"?: [names], "priority"?, "max_attempts"?, "run_at"?: ms since the epoch, "lease_ms"?}]}.
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
                throw CoreError.fileUnreadable(path: path, reason: "no such file, or not readable")
            }
            data = contents
        }
        let description = try JSON.decode(RunDescription.self, from: data, context: path == "-" ? "stdin" : path)
        try description.validate()
        printEnqueued(try queue(invocation).enqueue(description), json: invocation.arguments.flag("json"))
    }

    static func printEnqueued(_ result: EnqueueResult, json: Bool) {
        if json { Console.print(JSON.pretty(result)); return }
        let jobs = result.jobIDs.count == 1 ? "1 job" : "\(result.jobIDs.count) jobs"
        Console.print(result.existing ? "\(result.runID) already exists (same unique key), \(jobs)"
                                      : "enqueued \(result.runID) with \(jobs)")
    }

    static let worker = Command(
        "worker", summary: "claim and run jobs until stopped (SIGINT/SIGTERM: finish the current job; twice: release it)",
        options: [
            OptionSpec("kinds", value: "K[,K]", help: "job kinds to claim (this executable runs: \(handlers.keys.sorted().joined(separator: ", ")))"),
            .flag("exit-when-idle", help: "exit once no job of these kinds is ready, running or due within two minutes (later runs are not waited for)"),
            OptionSpec("lease-ms", value: "MS", help: "lease length, for every job when given (default: the job's own lease_ms, else 30000); heartbeats every third of it"),
            OptionSpec("concurrency", value: "N", help: "jobs run at once in this process (default 1); jobs finishing together share one commit"),
            OptionSpec("poll-us", value: "US", help: "where inotify is unavailable: how often an idle worker looks for commits (default 1000)"),
            .flag("verbose", help: "log every claim and completion on stderr"),
            .json,
        ]
    ) { invocation in
        let a = invocation.arguments
        let kinds = a.list("kinds") ?? []
        guard !kinds.isEmpty else { throw UsageError("--kinds needs at least one job kind") }
        for kind in kinds where handlers[kind] == nil {
            throw UsageError("'adapt worker' cannot run '\(kind)' jobs (it runs \(handlers.keys.sorted().joined(separator: ", "))); "
                             + "pipeline steps run in their own adapt-<kind>-worker executables")
        }
        let verbose = a.flag("verbose")
        let options = WorkerOptions(
            kinds: kinds, leaseMilliseconds: Int64(try a.int("lease-ms", default: 30_000, in: ClaimRequest.leaseRange)),
            leaseOverridesJobs: a.has("lease-ms"), concurrency: try a.int("concurrency", default: 1, in: 1...256),
            exitWhenIdle: a.flag("exit-when-idle"), pollMicroseconds: try a.int("poll-us", default: 1_000, in: 50...1_000_000),
            log: { line in
                if verbose || !(line.hasPrefix("claimed ") || line.hasPrefix("completed ")) { Console.error("worker: \(line)") }
            })
        let queue = try queue(invocation)
        let handlers = JobCommands.handlers
        let worker = Worker(queue: queue, options: options) { claim, context in
            guard let body = handlers[claim.kind] else { return .discard(error: "no handler for kind \(claim.kind)") }
            return try await body(claim, context)
        }
        let signals = worker.stopOnSignals()
        let summary = try await worker.run()
        withExtendedLifetime(signals) {}
        if a.flag("json") {
            Console.print(JSON.pretty(summary))
        } else {
            Console.error("worker \(options.owner): \(summary.succeeded) succeeded, \(summary.failed) failed (will retry), "
                          + "\(summary.discarded) discarded, \(summary.cancelled) cancelled, \(summary.released) released, "
                          + "\(summary.leaseLost) lost their lease; \(summary.commits) commits")
        }
    }

    static let cancel = Command(
        "cancel", summary: "cancel a run: jobs not yet running are cancelled, running ones stop at their next heartbeat",
        options: [.json], positionals: [PositionalSpec("RUN", help: "run id (run-N or N)")]
    ) { invocation in
        let id = try runID(invocation.arguments.required("RUN"), option: "RUN")
        let outcome = try queue(invocation).cancel(run: id)
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
        let outcome = try queue(invocation).retry(job: id)
        if invocation.arguments.flag("json") { Console.print(JSON.pretty(outcome)); return }
        Console.print("\(id) is \(outcome.state) again; \(outcome.dependents) cancelled dependent(s) back to pending")
    }

    static let rescue = Command(
        "rescue", summary: "put jobs whose lease expired back to ready (workers also do this by themselves)",
        options: [.json]
    ) { invocation in
        let rescued = try queue(invocation).rescueExpiredLeases()
        if invocation.arguments.flag("json") { Console.print(JSON.pretty(rescued)); return }
        if rescued.isEmpty { Console.print("no expired leases"); return }
        for r in rescued { Console.print("\(r.job): attempt \(r.attempt) lost its lease → \(r.state)") }
    }

    static let prune = Command(
        "prune-history", summary: "delete finished runs (with their jobs and events) older than DAYS, then run gc",
        options: [OptionSpec("older-than", value: "DAYS", help: "age of the run's last change, in days (0 prunes every finished run)"), .json]
    ) { invocation in
        let days = try invocation.arguments.double("older-than")
        guard let days else { throw UsageError("missing --older-than") }
        guard days >= 0 else { throw UsageError("--older-than must not be negative, got \(days)") }
        let queue = try queue(invocation)
        let outcome = try queue.pruneHistory(olderThanMilliseconds: Int64(days * 86_400_000))
        // The pruned runs owned blobs (snapshots, adapters, checkpoints): collect what nothing owns now. Its
        // report goes to stderr, so the command's own output keeps its shape.
        let collected = try BlobCollector(database: queue.database, blobs: try GlobalOptions.stateDirectory(invocation).blobs).collect()
        Console.error("gc: " + GCCommand.describe(collected))
        if invocation.arguments.flag("json") { Console.print(JSON.pretty(outcome)); return }
        Console.print("pruned \(outcome.runs) run(s), \(outcome.jobs) job(s), \(outcome.events) event(s)")
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
