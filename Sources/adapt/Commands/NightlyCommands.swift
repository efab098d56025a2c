import AdaptCore
import CommandLineKit
import Foundation
import JobQueue
import Pipelines
import Steps
import WorkerRuntime

/// `adapt enqueue nightly`, `adapt work` and `adapt replay`: the nightly pipeline as people drive it.
enum NightlyCommands {
    static let all: [Command] = [enqueueNightly, work, replay]

    static func environment(_ invocation: Invocation) throws -> (StepEnvironment, JobQueue) {
        let database = try GlobalOptions.database(invocation)
        let environment = StepEnvironment(state: try GlobalOptions.stateDirectory(invocation), database: database,
                                          deviceRoot: StepEnvironment.deviceRoot(), log: { Console.error($0) })
        return (environment, try JobQueue(database: database))
    }

    static let enqueueNightly = Command(
        "enqueue nightly", summary: "enqueue tonight's run of a lineage's pipeline (idempotent per lineage and night)",
        discussion: """
            The run's unique key is <lineage>/<night>: enqueueing the same night again returns the first run
            with "existing": true. The manifest records the pipeline's digest and definition, the seed, the
            BLAS thread count and the base model's SHA-256; each step adds its input and output digests as it
            completes. --at delays the first step (HH:MM today or tomorrow, or an ISO 8601 time); the night
            is the local date of --at (or of now) unless --night says otherwise.
            """,
        options: [
            OptionSpec("lineage", value: "L", help: "the lineage (letters, digits, -, _)"),
            OptionSpec("pipeline", value: "FILE", help: "pipeline file (default: the built-in nightly pipeline)"),
            OptionSpec("model", value: "NAME", help: "base model file or name in the state's models/ (default \(DefaultModel.fileName))"),
            OptionSpec("at", value: "TIME", help: "not before this time: HH:MM (next occurrence) or YYYY-MM-DDTHH:MM[:SS][Z]"),
            OptionSpec("night", value: "YYYY-MM-DD", help: "the night the run belongs to (default: the local date of --at or now)"),
            OptionSpec("seed", value: "S", help: "the run's seed (default: the pipeline's, else derived from lineage and night)"),
            .json,
        ]
    ) { invocation in
        let a = invocation.arguments
        let lineage = try a.required("lineage")
        guard SafeName.isValid(lineage) else { throw UsageError("--lineage: \(PipelineError.invalidLineage(lineage))") }
        let pipeline = try PipelineCommands.loadRunnable(a.string("pipeline"))
        // A setting a pipeline file can state but the run does not apply: say so rather than ignore it.
        if pipeline.sample.heldOutFraction != SampleParameters().heldOutFraction {
            Console.error("adapt: warning: sample.held_out_fraction is not applied per run; the lineage's stored policy "
                          + "decides the held-out split (adapt data policy --lineage \(lineage) --held-out-fraction F)")
        }
        let runAt = try a.string("at").map(parseTime)
        let night = try a.string("night").map { text in
            do { return try Night(parsing: text) } catch let error as PipelineError { throw UsageError("--night: \(error)") }
        }
            ?? Night(date: Date(timeIntervalSince1970: Double(runAt ?? SystemClock().nowMilliseconds()) / 1000))
        var seed: UInt64?
        if let text = a.string("seed") {
            guard let value = UInt64(text) else { throw UsageError("--seed expects a non-negative integer, got '\(text)'") }
            seed = value
        }
        if a.string("model") == "" {
            throw UsageError("--model needs a model file's path or a name in the state's models/ directory, got ''")
        }
        let (environment, queue) = try environment(invocation)
        let result = try NightlyRun.enqueue(queue: queue, environment: environment, pipeline: pipeline, lineage: lineage,
                                            night: night, seed: seed, model: a.string("model") ?? DefaultModel.fileName,
                                            runAt: runAt)
        JobCommands.printEnqueued(result, json: a.flag("json"))
    }

    /// `HH:MM` (the next time the clock shows it) or an ISO 8601 date-time; milliseconds since the epoch.
    static func parseTime(_ text: String) throws -> Int64 {
        if let time = try? TimeOfDay(parsing: text) {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = .current
            let now = Date()
            var parts = calendar.dateComponents([.year, .month, .day], from: now)
            parts.hour = time.hour
            parts.minute = time.minute
            guard var date = calendar.date(from: parts) else { throw UsageError("--at: cannot place \(text) on today's date") }
            if date <= now { date = calendar.date(byAdding: .day, value: 1, to: date) ?? date }
            return Int64(date.timeIntervalSince1970 * 1000)
        }
        let formatter = ISO8601DateFormatter()
        for options: ISO8601DateFormatter.Options in [[.withInternetDateTime], [.withFullDate, .withTime, .withColonSeparatorInTime]] {
            formatter.formatOptions = options
            if let date = formatter.date(from: text) { return Int64(date.timeIntervalSince1970 * 1000) }
        }
        throw UsageError("--at expects HH:MM or an ISO 8601 time such as 2026-12-01T02:00:00Z, got '\(text)'")
    }

    static let work = Command(
        "work", summary: "run the pipeline's worker executables as separate processes and keep them running",
        discussion: """
            Starts adapt-<kind>-worker (found next to this executable) for each kind, restarts one that exits
            unexpectedly (with a doubling backoff), and forwards SIGINT/SIGTERM: the first lets running steps
            finish (training yields at its next checkpoint), the second releases them. Workers exit when the
            supervisor dies, even by SIGKILL; a worker that dies has its steps handed back at once (the attempt
            counts). One `adapt work` per state directory: a second is refused while the first runs. With
            --exit-when-idle it stops the workers and exits 0 once no step of these kinds is ready or running, or
            due within two minutes (a retry's backoff); steps scheduled later are listed on stderr, not waited for.
            """,
        options: [
            OptionSpec("workers", value: "K[,K]", help: "kinds to run (default prune,sample,train,eval,promote)"),
            .flag("exit-when-idle", help: "exit once no step of these kinds is ready, running or due within two minutes"),
            OptionSpec("lease-ms", value: "MS", help: "passed to every worker, where it replaces the steps' lease_seconds (default: each step's own)"),
            .json,
        ]
    ) { invocation in
        let a = invocation.arguments
        let kinds = a.list("workers") ?? NightlyRun.kinds
        for kind in kinds where !NightlyRun.kinds.contains(kind) {
            throw UsageError("--workers: unknown kind '\(kind)'; use \(NightlyRun.kinds.joined(separator: ", "))")
        }
        guard !kinds.isEmpty else { throw UsageError("--workers needs at least one kind") }
        let (_, queue) = try environment(invocation)
        let state = try GlobalOptions.stateDirectory(invocation)
        // Held until this process exits, however it exits: a second `adapt work` on this state is refused.
        let lock = try SupervisorLock(stateRoot: state.root)
        var workerArguments = ["--state", state.root.path]
        if let durability = invocation.global.string("durability") { workerArguments += ["--durability", durability] }
        if a.string("lease-ms") != nil { workerArguments += ["--lease-ms", String(try a.int("lease-ms", default: 0, in: ClaimRequest.leaseRange))] }
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let supervisor = WorkerSupervisor(
            options: .init(kinds: kinds, directory: Self.executableDirectory(fallback: directory), workerArguments: workerArguments,
                           exitWhenIdle: a.flag("exit-when-idle"), log: { Console.error("work: \($0)") }),
            queue: queue)
        let signals = SignalHandlers { _ in supervisor.requestStop() }
        let summary = try await supervisor.run()
        withExtendedLifetime((signals, lock)) {}
        if a.flag("json") { Console.print(JSON.pretty(summary)) }
    }

    /// The directory of the running `adapt` executable (where the worker executables are built and installed).
    static func executableDirectory(fallback: URL) -> URL {
        if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            return URL(fileURLWithPath: path).deletingLastPathComponent()
        }
        return fallback
    }

    static let replay = Command(
        "replay", summary: "re-execute a recorded run in a scratch state directory and compare every digest",
        discussion: """
            Copies the inputs the run recorded (the replay-buffer snapshot, the incumbent adapter, the base
            model's path and digest) into a scratch state directory, re-runs each step that succeeded with the
            same bodies the workers use, and compares each step's input digests and results with the record.
            --json prints {run_id, equal, first_difference, steps}; first_difference is null or {step, field,
            expected, actual}: a step's input field that differs from the one it ran with (input.learning_rate)
            comes before any result or digest. With --check a difference exits with status 1. The default
            scratch directory is private (0700) inside the state directory; one left by a killed replay is
            removed by the next.
            A run whose input was erased ('data forget') or expired cannot be replayed: exit 2, and --json says so
            ("replayable": false).
            With --bundle FILE (from 'adapt run export') no state directory is needed: the run is replayed from
            the bundle in a private scratch directory under the system temporary directory, removed afterwards,
            reading the base model from --model (default: the bundle's model name in STATE/models); a damaged
            bundle, an altered blob, a missing model or one with another SHA-256 cannot be replayed: exit 2.
            """,
        options: [
            .flag("check", help: "exit 1 when any compared value differs"),
            OptionSpec("bundle", value: "FILE", help: "replay a bundle written by 'adapt run export' instead of a run of this state"),
            OptionSpec("model", value: "PATH", help: "with --bundle: the base model file (its SHA-256 must be the bundle's)"),
            OptionSpec("scratch", value: "DIR", help: "replay here and keep it (default: STATE/scratch/replay-PID-…, private, removed after)"),
            .json,
        ],
        positionals: [PositionalSpec("RUN", optional: true, help: "run id (run-N or N); none with --bundle")]
    ) { invocation in
        let a = invocation.arguments
        if let bundle = a.string("bundle") {
            if a.string("RUN") != nil { throw UsageError("give either RUN or --bundle FILE, not both") }
            return try BundleCommands.replayBundle(invocation, path: bundle)
        }
        if a.string("model") != nil { throw UsageError("--model applies to --bundle only; a run of this state reads the model it recorded") }
        guard let text = a.string("RUN") else { throw UsageError("give the run to replay (run-N), or --bundle FILE from 'adapt run export'") }
        guard let runID = RunID.parse(text) else { throw UsageError("RUN must look like run-N or N, got '\(text)'") }
        let (environment, queue) = try environment(invocation)
        guard try queue.runExists(runID) else { throw JobQueueError.unknownRun(runID) }
        let scratchURL: URL
        let temporary = a.string("scratch") == nil
        if let path = a.string("scratch") {
            scratchURL = URL(fileURLWithPath: path)
            if let contents = try? FileManager.default.contentsOfDirectory(atPath: path), !contents.isEmpty {
                throw UsageError("--scratch \(path) is not empty; replay needs an empty directory")
            }
        } else {
            scratchURL = try ReplayScratch.make(in: environment.state)
        }
        defer { if temporary { try? FileManager.default.removeItem(at: scratchURL) } }
        let report: RunReplay.Report
        do {
            report = try RunReplay(original: environment, queue: queue, scratch: StateDirectory(root: scratchURL),
                                   log: { Console.error("replay: " + TerminalText.escaped($0)) }).replay(runID)
        } catch let error as StepError {
            // An erased input cannot be replayed, like a missing model: exit 2, and --json says why.
            guard case .inputErased = error else { throw error }
            if a.flag("json") {
                let erased = try queue.jobs(matching: JobQueue.JobFilter(run: runID, limit: 10_000)).sorted { $0.id < $1.id }
                    .flatMap { try ErasedInput.of($0, in: queue.database) }
                Console.print(JSON.pretty(JSONValue.object([
                    "run_id": .string(runID.description), "equal": .bool(false), "first_difference": .null,
                    "replayable": .bool(false), "error": .string(error.description),
                    "erased_inputs": try JSON.decode(JSONValue.self, from: JSON.canonical(erased), context: "erased inputs"),
                ])))
            }
            Console.error("adapt: error: \(error.description)")
            throw ExitCode(2)
        }
        if a.flag("json") {
            Console.print(JSON.pretty(report))
        } else if let d = report.firstDifference {
            Console.print(TerminalText.escaped("\(report.runID): differs at \(d.step).\(d.field): "
                                               + "\(JSON.canonicalString(d.expected)) → \(JSON.canonicalString(d.actual))"))
        } else {
            Console.print("\(report.runID): every compared value is equal (\(report.steps.count) steps)")
        }
        if a.flag("check") && !report.equal { throw ExitCode(1) }
    }
}
