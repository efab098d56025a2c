import AdaptCore
import CommandLineKit
import CommandLineState
import Foundation
import Services

/// `adapt enqueue nightly`, `adapt work` and `adapt replay`: the nightly pipeline as people drive it.
enum NightlyCommands {
    static let all: [Command] = [enqueueNightly, work, replay]

    static let enqueueNightly = Command(
        "enqueue nightly", summary: "enqueue tonight's run of a lineage's pipeline (idempotent per lineage and night)",
        discussion: """
            The run's unique key is <lineage>/<night>: enqueueing the same night again returns the first run
            with "existing": true. The manifest records the pipeline's digest and definition, the seed, the
            BLAS thread count and the base model's SHA-256; each step adds its input and output digests as it
            completes. --at delays the first step (HH:MM today or tomorrow, or an ISO 8601 time); the night
            is the local date of --at (or of now) unless --night says otherwise.
            """,
        options: [Enqueue.lineage, Enqueue.pipeline, Enqueue.model, Enqueue.at, Enqueue.night, Enqueue.seed, .json]
    ) { invocation in
        let a = invocation.arguments
        let lineage = try a.required(Enqueue.lineage)
        let pipeline = try PipelineCommands.load(try a[Enqueue.pipeline])
        // A setting a pipeline file can state but the run does not apply: say so rather than ignore it.
        if PipelineFiles.statesUnappliedHeldOutFraction(pipeline) {
            Console.error("adapt: warning: sample.held_out_fraction is not applied per run; the lineage's stored policy "
                          + "decides the held-out split (adapt data policy --lineage \(lineage) --held-out-fraction F)")
        }
        let runAt = try a[Enqueue.at]
        let night = try a[Enqueue.night]
            ?? Night(date: Date(timeIntervalSince1970: Double(runAt ?? SystemClock().nowMilliseconds()) / 1000))
        let seed = try a[Enqueue.seed]
        let model = try a[Enqueue.model]
        try NightlyModelCheck.requireModel(model, in: try GlobalOptions.hostState(invocation))
        let result = try GlobalOptions.postgresDatabase(invocation).map { url in
            try Nightly.enqueue(state: try GlobalOptions.hostState(invocation), postgres: url, pipeline: pipeline,
                                lineage: lineage, night: night, seed: seed, model: model, runAt: runAt) { Console.error($0) }
        } ?? Nightly.enqueue(state: try GlobalOptions.stateDirectory(invocation), database: try GlobalOptions.database(invocation),
                             pipeline: pipeline, lineage: lineage, night: night, seed: seed,
                             model: model, runAt: runAt) { Console.error($0) }
        JobCommands.printEnqueued(result, json: a[.json])
    }

    /// The options of `enqueue nightly`.
    enum Enqueue {
        static let lineage = Option(lineage: "the lineage (letters, digits, -, _)")
        static let pipeline = Option<String?>("pipeline", value: "FILE", help: "pipeline file (default: the built-in nightly pipeline)")
        static let model = Option("model", value: "NAME", default: DefaultModel.fileName, defaultHelp: DefaultModel.fileName,
                                  help: "base model file or name in the state's models/") { text in
            guard !text.isEmpty else { throw UsageError("needs a model file's path or a name in the state's models/ directory, got ''") }
            return text
        }
        static let at = Option<Int64?>("at", value: "TIME", default: nil,
                                       help: "not before this time: HH:MM (next occurrence) or YYYY-MM-DDTHH:MM[:SS][Z]") {
            try parseTime($0)
        }
        static let night = Option<Night?>("night", value: "YYYY-MM-DD", default: nil,
                                          help: "the night the run belongs to (default: the local date of --at or now)") {
            try Night(parsing: $0)
        }
        static let seed = Option<UInt64?>("seed", value: "S", default: nil,
                                          help: "the run's seed (default: the pipeline's, else derived from lineage and night)") { text in
            guard let value = UInt64(text) else { throw UsageError("expects a non-negative integer, got '\(text)'") }
            return value
        }
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
            guard var date = calendar.date(from: parts) else { throw UsageError("cannot place \(text) on today's date") }
            if date <= now { date = calendar.date(byAdding: .day, value: 1, to: date) ?? date }
            return Int64(date.timeIntervalSince1970 * 1000)
        }
        let formatter = ISO8601DateFormatter()
        for options: ISO8601DateFormatter.Options in [[.withInternetDateTime], [.withFullDate, .withTime, .withColonSeparatorInTime]] {
            formatter.formatOptions = options
            if let date = formatter.date(from: text) { return Int64(date.timeIntervalSince1970 * 1000) }
        }
        throw UsageError("expects HH:MM or an ISO 8601 time such as 2026-12-01T02:00:00Z, got '\(text)'")
    }

    static let work = Command(
        "work", summary: "run the pipeline's worker executables as separate processes and keep them running",
        discussion: """
            Starts adapt-<kind>-worker (found next to this executable, or in ../lib/adapt/ beside its bin/ directory) for each kind, restarts one that exits
            unexpectedly (with a doubling backoff), and forwards SIGINT/SIGTERM: the first lets running steps
            finish (training yields at its next checkpoint), the second releases them. Workers exit when the
            supervisor dies, even by SIGKILL; a worker that dies has its steps handed back at once (the attempt
            counts). One `adapt work` per state directory: a second is refused while the first runs. Before the workers
            start, each lineage's active export (STATE/exports/L) that does not serve its active version is rewritten or
            removed (a promotion killed between its commit and its export leaves one). With
            --exit-when-idle it stops the workers and exits 0 once no step of these kinds is ready or running, or
            due within two minutes (a retry's backoff); steps scheduled later are listed on stderr, not waited for.
            While steps run, their progress (step N/M, the loss raw and smoothed, tokens per second, time left) goes
            to stderr: as a bar per running step, redrawn in place, when stdout is a terminal; as JSON lines
            ({"type": "progress", "at", "running": [{job_id, run_id, name, kind, attempt, step, total_steps, loss,
            smoothed_loss, tokens_per_second, eta_seconds, at}]}) with --json.
            Each nightly run that ends while it works is announced on stdout ("run ended: …; {outcome JSON}"; with
            --json as a {"type": "run_ended", "outcome"} line on stderr), and its pipeline's notify command, if it
            names one, is run with the outcome JSON on stdin: {run_id, lineage, night, state, result (promoted,
            refused, failed, cancelled), gate, version, failed_step, finished_at, report}.
            With --database postgres://… (or ADAPT_DATABASE) the workers keep every row and blob there and --state names
            this host's own directory (its models/ and exports/): hosts that share only the database each run one
            `adapt work`. There, progress is every running step's, whichever host runs it; no run's end is announced yet.
            """,
        options: [Work.workers, Work.exitWhenIdle, Work.lease, .json]
    ) { invocation in
        let a = invocation.arguments
        let kinds = try a[Work.workers]
        guard !kinds.isEmpty else { throw UsageError("--workers needs at least one kind") }
        let lease = try a[Work.lease]
        // The workers read the state the way this command did: the same options, resolved by the same code.
        var workerArguments = try StateOptions.forwarded(invocation.global)
        if let lease { workerArguments += ["--lease-ms", String(lease)] }
        let request = Nightly.WorkRequest(kinds: kinds, executableDirectory: WorkerLocation.directory(adaptExecutable: WorkerLocation.currentExecutable),
                                          workerArguments: workerArguments, exitWhenIdle: a[Work.exitWhenIdle])
        let postgres = try GlobalOptions.postgresDatabase(invocation)
        let state = try postgres == nil ? GlobalOptions.stateDirectory(invocation) : GlobalOptions.hostState(invocation)
        // The workers store nothing until a run is enqueued: a state directory that does not exist is a mistyped
        // --state, refused before anything is created (`StateAccess.waitingForWork`).
        let database = try postgres == nil ? GlobalOptions.workerDatabase(invocation) : nil
        if let database { try Nightly.prepareStore(database) } else { _ = try state.createPrivate() }
        // Progress goes to stderr, as `adapt train`'s does: bars when a person watches (stdout is a terminal), JSON
        // lines with --json (stdout keeps its one summary document), nothing new otherwise. On PostgreSQL it is
        // every running step's, whichever host runs it.
        let style: ProgressBoard.Style? = a[.json] ? .jsonLines : Console.isTerminal ? .bars : nil
        let board = style.map(ProgressBoard.init(style:))
        let watcher = try board.map { board in
            let live = try postgres.map(LiveProgress.init(postgres:)) ?? LiveProgress(database: try StateAccess.reading(state))
            return Task { try? await live.follow { board.show($0, at: SystemClock().nowMilliseconds()) } }
        }
        let log: @Sendable (String) -> Void = { line in
            if let board { board.log("work: \(line)") } else { Console.error("work: \(line)") }
        }
        // Each run that ends while this works is announced: on stdout (under the systemd timer, the unit's stdout is
        // the journal), as a JSON line on stderr with --json, and to the pipeline's notify command.
        let json = a[.json]
        let since = SystemClock().nowMilliseconds()
        let notifier = try postgres.map { try RunNotifier(postgres: $0, since: since) }
            ?? RunNotifier(database: try StateAccess.reading(state), since: since)
        let announce: @Sendable (RunOutcome) async -> Void = { outcome in
            if json {
                Console.error(JSON.canonicalString(JSONValue.object([
                    "type": .string("run_ended"),
                    "outcome": (try? JSON.decode(JSONValue.self, from: JSON.canonical(outcome), context: "outcome")) ?? .null,
                ])))
            } else {
                Console.print("run ended: \(TerminalText.escaped(outcome.sentence)); \(JSON.canonicalString(outcome))")
            }
            let delivery = await withCheckedContinuation { continuation in
                DispatchQueue.global().async { continuation.resume(returning: RunNotifier.deliver(outcome)) }
            }
            switch delivery {
            case .none: break
            case let .delivered(command): log("\(outcome.runID): told \(command)")
            case let .failed(command, reason): log("warning: \(outcome.runID): notify command \(command) failed: \(reason)")
            }
        }
        let notifying = Task {
            do { try await notifier.follow(announce) } catch is CancellationError {} catch {
                log("warning: stopped looking for runs that ended: \(error)")
            }
        }
        defer {
            watcher?.cancel()
            notifying.cancel()
            board?.finish()
        }
        let summary = if let postgres {
            try await Nightly.work(request, state: state, postgres: postgres, log: log)
        } else {
            // Opened above whenever no PostgreSQL database is named.
            try await Nightly.work(request, state: state, database: database ?? GlobalOptions.database(invocation), log: log)
        }
        board?.finish()
        notifying.cancel()
        _ = await notifying.value
        // The last run may have ended in the commit the workers made just before they stopped. The workers' work is
        // done and stored whatever this look meets, so a failure (the server out of reach) is a warning.
        do {
            try await notifier.announceEnded(announce)
        } catch {
            log("warning: could not look for runs that ended: \(error)")
        }
        if a[.json] { Console.print(JSON.pretty(summary)) }
    }

    /// The options of `work`.
    enum Work {
        static let workers = Option("workers", value: "K[,K]", default: Nightly.kinds, defaultHelp: Nightly.kinds.joined(separator: ","),
                                    help: "kinds to run") { text in
            let kinds = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            for kind in kinds where !Nightly.kinds.contains(kind) {
                throw UsageError("names an unknown kind '\(kind)'; use \(Nightly.kinds.joined(separator: ", "))")
            }
            return kinds
        }
        static let exitWhenIdle = Flag("exit-when-idle", help: "exit once no step of these kinds is ready, running or due within two minutes")
        static let lease = Option<Int?>("lease-ms", value: "MS", in: ClaimRequest.leaseRange,
                                        help: "passed to every worker, where it replaces the steps' lease_seconds (default: each step's own)")
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
            removed by the next. A directory kept with --scratch holds a copy of the replay buffer: it is recorded in
            the state, and 'data forget' or an expiry that erases text it holds removes it. With --database postgres://… (or ADAPT_DATABASE) the run, its records and its blobs
            are read from that database, and --state names this host's directory (the model in models/, the scratch).
            A run whose input was erased ('data forget') or expired cannot be replayed: exit 2, and --json says so
            ("replayable": false).
            With --bundle FILE (from 'adapt run export') no state directory is needed: the run is replayed from
            the bundle in a private scratch directory under the system temporary directory, removed afterwards,
            reading the base model from --model (default: the bundle's model name in STATE/models); a damaged
            bundle, an altered blob, a missing model or one with another SHA-256 cannot be replayed: exit 2.
            A step recorded under other arithmetic than it runs with here (the manifest's arithmetic.<step>:
            OpenBLAS version or core type, thread count, kernels) cannot match bit for bit (when only the core
            type differs and this CPU runs the recorded one, replay executes itself again with it and compares
            bits): exit 2, naming the field, unless --tolerance X is given; then, from that step on,
            floating-point results (losses, validation losses, per-example NLLs, the gate's statistics) are
            compared within X and everything else exactly. The JSON's comparison is {mode: bits|tolerance, tolerance, from_step, largest_difference}.
            """,
        options: [Replay.check, Replay.bundle, Replay.model, Replay.scratch, Replay.tolerance, .json],
        positionals: [PositionalSpec("RUN", optional: true, help: "run id (run-N or N); none with --bundle")]
    ) { invocation in
        let a = invocation.arguments
        if let bundle = try a[Replay.bundle] {
            if a.string("RUN") != nil { throw UsageError("give either RUN or --bundle FILE, not both") }
            return try BundleCommands.replayBundle(invocation, path: bundle)
        }
        if try a[Replay.model] != nil { throw UsageError("--model applies to --bundle only; a run of this state reads the model it recorded") }
        guard let text = a.string("RUN") else { throw UsageError("give the run to replay (run-N), or --bundle FILE from 'adapt run export'") }
        guard let runID = RunID.parse(text) else { throw UsageError("RUN must look like run-N or N, got '\(text)'") }
        let outcome: Nightly.ReplayOutcome
        do {
            // On PostgreSQL the run's rows and blobs are the server's; the model and the scratch are this host's.
            let (state, runs) = try GlobalOptions.postgresDatabase(invocation).map { url in
                let host = try GlobalOptions.hostState(invocation)
                _ = try host.createPrivate()
                return (host, try RecordedRuns(postgres: url))
            } ?? {
                let state = try GlobalOptions.stateDirectory(invocation)
                return (state, try RecordedRuns(database: try GlobalOptions.existingDatabase(invocation), blobs: state.blobs))
            }()
            outcome = try Nightly.replay(runID, state: state, runs: runs,
                                         scratch: try a[Replay.scratch].map { URL(fileURLWithPath: $0) },
                                         tolerance: try a[Replay.tolerance],
                                         stepLog: { Console.error($0) }, log: { Console.error("replay: " + TerminalText.escaped($0)) })
        } catch let error as Nightly.ScratchNotEmpty {
            throw UsageError(error.description)
        }
        guard case let .compared(report) = outcome else {
            // An erased input cannot be replayed, like a missing model: exit 2, and --json says why.
            if case let .notReplayable(error, document) = outcome {
                if a[.json] { Console.print(JSON.pretty(document)) }
                Console.error("adapt: error: \(error.description)")
            }
            throw ExitCode(2)
        }
        if a[.json] {
            Console.print(JSON.pretty(report))
        } else if let d = report.firstDifference {
            Console.print(TerminalText.escaped("\(report.runID): differs at \(d.step).\(d.field): "
                                               + "\(JSON.canonicalString(d.expected)) → \(JSON.canonicalString(d.actual))"))
        } else {
            Console.print("\(report.runID): \(report.equalSentence)")
        }
        if a[Replay.check] && !report.equal { throw ExitCode(1) }
    }

    /// The options of `replay`.
    enum Replay {
        static let check = Flag("check", help: "exit 1 when any compared value differs")
        static let bundle = Option<String?>("bundle", value: "FILE",
                                            help: "replay a bundle written by 'adapt run export' instead of a run of this state")
        static let model = Option<String?>("model", value: "PATH",
                                           help: "with --bundle: the base model file (its SHA-256 must be the bundle's)")
        static let scratch = Option<String?>("scratch", value: "DIR",
                                             help: "replay here and keep it (default: STATE/scratch/replay-PID-…, private, removed after)")
        static let tolerance = Option<Double?>("tolerance", value: "X", in: 0...1e9,
                                               help: "where the recorded arithmetic differs from this machine's, compare floating-point "
                                               + "results within X (|replayed − recorded| ≤ X·max(1, |recorded|)) instead of bits")
    }
}
