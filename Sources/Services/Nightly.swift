import AdaptCore
import AdapterExchange
import Foundation
import JobQueue
import Pipelines
import Registry
import Steps
import Storage
import WorkerRuntime

/// The nightly pipeline as people drive it: `enqueue nightly`, `work` and `replay`.
public enum Nightly {
    /// Enqueues the run of `pipeline` for `lineage` and `night` (idempotent per lineage and night).
    public static func enqueue(state: StateDirectory, database: Database, pipeline: Pipeline, lineage: Lineage, night: Night,
                               seed: UInt64?, model: String, runAt: Int64?, log: @escaping @Sendable (String) -> Void) throws -> EnqueueResult {
        let environment = StepEnvironment(state: state, database: database, deviceRoot: StepEnvironment.deviceRoot(), log: log)
        return try NightlyRun.enqueue(queue: try JobQueue(database: database), environment: environment, pipeline: pipeline,
                                      lineage: lineage.name, night: night, seed: seed, model: model, runAt: runAt)
    }

    /// `enqueue` on a PostgreSQL database: the base model is read from `state`'s models/ (each host that runs the
    /// steps needs the same file in its own), the run goes to the server's job tables.
    public static func enqueue(state: StateDirectory, postgres connectionString: String, pipeline: Pipeline, lineage: Lineage,
                               night: Night, seed: UInt64?, model: String, runAt: Int64?,
                               log: @escaping @Sendable (String) -> Void) throws -> EnqueueResult {
        let queue = try PostgresJobQueue(connectionString: connectionString)
        let environment = StepEnvironment(state: state, connection: queue.connection, blobs: try PostgresBlobStore(connection: queue.connection),
                                          deviceRoot: StepEnvironment.deviceRoot(), log: log)
        return try NightlyRun.enqueue(queue: queue, environment: environment, pipeline: pipeline,
                                      lineage: lineage.name, night: night, seed: seed, model: model, runAt: runAt)
    }

    /// The step kinds `work` runs by default, each in its own worker executable.
    public static var kinds: [String] { NightlyRun.kinds }

    /// What `work` is told: which workers, where their executables are, what each is passed.
    public struct WorkRequest: Sendable {
        public var kinds: [String]
        public var executableDirectory: URL
        public var workerArguments: [String]
        public var exitWhenIdle: Bool
        /// Set in the workers' environment (the PostgreSQL database, see `work(_:state:postgres:log:)`).
        public var workerEnvironment: [String: String] = [:]

        public init(kinds: [String], executableDirectory: URL, workerArguments: [String], exitWhenIdle: Bool) {
            (self.kinds, self.executableDirectory, self.workerArguments, self.exitWhenIdle) =
                (kinds, executableDirectory, workerArguments, exitWhenIdle)
        }
    }

    /// Brings the job store of `database` (a writing connection) to this build's schema, so that the connections
    /// `work` opens only to read (live progress, run outcomes) find it as they expect.
    public static func prepareStore(_ database: Database) throws {
        _ = try JobQueue(database: database)
    }

    /// Runs the worker executables under a supervisor until SIGINT/SIGTERM (or idle); one per state directory.
    public static func work(_ request: WorkRequest, state: StateDirectory, database: Database,
                            log: @escaping @Sendable (String) -> Void) async throws -> WorkerSupervisor.Summary {
        try await work(request, state: state, queue: try JobQueue(database: database),
                       registry: try AdapterRegistry(database: database, blobs: state.blobs), log: log)
    }

    /// `work` with the workers on the PostgreSQL database `connectionString`: they get it as `ADAPT_DATABASE` and
    /// `state` as the host's own directory (models, exports); one supervisor per such directory.
    public static func work(_ request: WorkRequest, state: StateDirectory, postgres connectionString: String,
                            log: @escaping @Sendable (String) -> Void) async throws -> WorkerSupervisor.Summary {
        // The step bodies' tables are created here once rather than by five workers at once.
        let queue = try PostgresJobQueue(connectionString: connectionString)
        _ = try PostgresBlobStore(connection: queue.connection)
        log("on \(queue.displayTarget)")
        var request = request
        request.workerEnvironment[WorkerSupervisor.databaseVariable] = connectionString
        let registry = try AdapterRegistry(connection: queue.connection, blobs: try PostgresBlobStore(connection: queue.connection))
        return try await work(request, state: state, queue: queue, registry: registry, log: log)
    }

    private static func work(_ request: WorkRequest, state: StateDirectory, queue: any WorkerEngine, registry: AdapterRegistry,
                             log: @escaping @Sendable (String) -> Void) async throws -> WorkerSupervisor.Summary {
        // Held until this process exits, however it exits: a second `adapt work` on this state is refused.
        let lock = try SupervisorLock(stateRoot: state.root)
        repairActiveExports(registry: registry, state: state, log: log)
        var options = WorkerSupervisor.Options(kinds: request.kinds, directory: request.executableDirectory,
                                               workerArguments: request.workerArguments, exitWhenIdle: request.exitWhenIdle, log: log)
        options.workerEnvironment = request.workerEnvironment
        let supervisor = WorkerSupervisor(options: options, queue: queue)
        let signals = SignalHandlers { _ in supervisor.requestStop() }
        let summary = try await supervisor.run()
        withExtendedLifetime((signals, lock)) {}
        return summary
    }

    /// Brings every lineage's active export in line with the committed pointer before any step runs: a promotion
    /// killed between its commit and its export, or an export written by a commit that then failed, is put right
    /// here. A failure is logged; the workers start either way.
    static func repairActiveExports(registry: AdapterRegistry, state: StateDirectory, log: @Sendable (String) -> Void) {
        let repairs: [ActiveExportSync.Result]
        do { repairs = try ActiveExportSync.repair(registry: registry, model: state.defaultModel, state: state) } catch {
            log("warning: could not compare the active exports with the registry: \(error)")
            return
        }
        for repair in repairs {
            if let failure = repair.failure {
                log("warning: the active export of \(repair.lineage) does not match its active version and could not be rewritten: \(failure)")
            } else {
                log("the active export of \(repair.lineage) " + (repair.active.map { "was rewritten for \($0)" } ?? "was removed (base model)"))
            }
        }
    }

    /// A replay's result: the comparison, or why the run cannot be replayed.
    public enum ReplayOutcome: Sendable {
        case compared(RunReplay.Report)
        /// An input the run read was erased (`data forget`) or expired, or (comparing bits) a step's recorded
        /// arithmetic differs from this machine's; `document` is the `--json` answer.
        case notReplayable(StepError, document: JSONValue)
    }

    /// The `--json` answer of a replay by bits refused because `difference`'s step cannot match bit for bit here:
    /// `fields` plus `{equal, first_difference, replayable, error, arithmetic_difference, comparison}`.
    public static func arithmeticDocument(_ error: StepError, _ difference: RunReplay.ArithmeticDifference,
                                          fields: [String: JSONValue]) throws -> JSONValue {
        var document = fields
        document["equal"] = .bool(false)
        document["first_difference"] = .null
        document["replayable"] = .bool(false)
        document["error"] = .string(error.description)
        document["arithmetic_difference"] = try JSON.decode(JSONValue.self, from: JSON.canonical(difference), context: "arithmetic")
        document["comparison"] = .object(["mode": .string("bits"), "tolerance": .null, "from_step": .null, "largest_difference": .null])
        return .object(document)
    }

    /// `--scratch` names a directory that holds something: replay needs an empty one.
    public struct ScratchNotEmpty: Error, CustomStringConvertible {
        public let path: String
        public var description: String { "--scratch \(path) is not empty; replay needs an empty directory" }
    }

    /// Re-executes `run` of `runs` in `scratch` (or a private temporary directory inside `state`, removed after),
    /// comparing by bits, or within `tolerance` from the first step whose arithmetic differs (`ReplayComparison`).
    /// `state` is where the base model is read from and the scratch made: with PostgreSQL, this host's own
    /// directory. `stepLog` hears the steps' own lines, `log` the replay's.
    public static func replay(_ run: RunID, state: StateDirectory, runs: RecordedRuns, scratch: URL?,
                              tolerance: Double? = nil,
                              stepLog: @escaping @Sendable (String) -> Void,
                              log: @escaping @Sendable (String) -> Void) throws -> ReplayOutcome {
        let environment = StepEnvironment(state: state, connection: runs.connection, blobs: runs.blobs,
                                          deviceRoot: StepEnvironment.deviceRoot(), log: stepLog)
        let queue = runs.queue
        guard try queue.runExists(run) else { throw JobQueueError.unknownRun(run) }
        if let scratch, let contents = try? FileManager.default.contentsOfDirectory(atPath: scratch.path), !contents.isEmpty {
            throw ScratchNotEmpty(path: scratch.path)
        }
        // Recorded with other kernels this CPU runs: computed with them, the bits can match.
        // (A run that cannot be loaded says why below.)
        if let recorded = try? RecordedRun.load(run, queue: queue, connection: runs.connection, blobs: runs.blobs),
           let coreType = RunReplay.coreTypeToPin(manifest: recorded.manifest, steps: recorded.steps) {
            log("executing again with OpenBLAS core type \(coreType), the one the run was recorded with")
            _ = StepProcess.reexecute(pinning: coreType)
        }
        // A kept scratch holds a copy of the buffer outside the state: recorded first, so that erasure reaches it.
        if let scratch { try KeptReplayScratch.record(scratch, run: run.description, in: state) }
        let scratchURL = try scratch ?? ReplayScratch.make(in: state)
        defer { if scratch == nil { try? FileManager.default.removeItem(at: scratchURL) } }
        do {
            return .compared(try RunReplay(original: environment, queue: queue, scratch: StateDirectory(root: scratchURL),
                                           comparison: tolerance.map { .tolerance($0) } ?? .bits, log: log).replay(run))
        } catch let error as StepError {
            if case let .arithmeticDiffers(_, difference) = error {
                return .notReplayable(error, document: try arithmeticDocument(error, difference, fields: ["run_id": .string(run.description)]))
            }
            guard case .inputErased = error else { throw error }
            let erased = try queue.jobs(matching: JobQueue.JobFilter(run: run, limit: 10_000)).sorted { $0.id < $1.id }
                .flatMap { try ErasedInput.of($0, in: runs.connection) }
            return .notReplayable(error, document: .object([
                "run_id": .string(run.description), "equal": .bool(false), "first_difference": .null,
                "replayable": .bool(false), "error": .string(error.description),
                "erased_inputs": try JSON.decode(JSONValue.self, from: JSON.canonical(erased), context: "erased inputs"),
            ]))
        }
    }
}
