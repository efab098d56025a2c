import AdaptCore
import JobQueue
import Model
import Pipelines
import Storage

/// Binds the step bodies to the job engine: a claim becomes a `StepContext`, the body's outcome becomes the
/// `JobResult` the worker records.
///
/// On completion the job's output (`StepRecord.jobOutput`), the step's digests in the run's manifest and the
/// body's own `finalize` writes (prune's deletions, sample's budget uses, eval's score-cache rows, promote's
/// registration and pointer flip) all go into the one completion transaction, fenced by the claim's token: a
/// worker that lost its lease writes none of them. A deferral appends an event saying why, then snoozes the job to a later run_at without using
/// up an attempt.
public enum StepRunner {
    /// The body for `kind` (`prune`, `sample`, `train`, `eval`, `promote`), after its input passed the checks
    /// `adapt pipeline check` applies (an input from `adapt enqueue run` can hold anything).
    public static func run(kind: String, _ context: StepContext) throws -> StepOutcome {
        guard let stepKind = StepKind(rawValue: kind) else { throw StepError.unknownKind(kind) }
        let problems = StepInputCheck.problems(context.input, kind: stepKind)
        guard problems.isEmpty else {
            throw StepError.invalidInput(step: context.name, kind: kind, problems: problems.map(\.message))
        }
        switch kind {
        case "prune": return try PruneBody.run(context)
        case "sample": return try SampleBody.run(context)
        case "train": return try TrainBody.run(context)
        case "eval": return try EvalBody.run(context)
        case "promote": return try PromoteBody.run(context)
        default: throw StepError.unknownKind(kind)
        }
    }

    /// The worker body that runs pipeline steps of any kind in `environment`, whose connection must be the queue's
    /// (SQLite's `Database` or PostgreSQL's connection), so the steps' writes join the completion's transaction.
    /// `isStopping` says the worker was asked to stop (its first SIGINT/SIGTERM); `reexecute` (see `StepContext`)
    /// re-pins OpenBLAS's kernels by executing the worker again.
    public static func jobBody(environment: StepEnvironment, queue: any JobEngine,
                               isStopping: @escaping @Sendable () -> Bool = { false },
                               reexecute: (@Sendable (String?) -> Void)? = nil) -> JobBody {
        { claim, job in
            let record = try queue.run(claim.runID)
            let ancestors = try ancestorOutputs(queue: queue, job: claim.jobID)
            let context = StepContext(
                environment: environment, name: claim.name, input: claim.input, manifest: record.manifest,
                ancestors: ancestors, recorded: nil,
                progress: { try job.progress($0) },
                isCancelled: { job.isCancelled }, isStopping: isStopping,
                checkpointPointer: JobCheckpointPointer(queue: queue, job: claim.jobID, record: { try job.recordCheckpointPointer($0) }),
                reexecute: reexecute)
            let outcome: StepOutcome
            do {
                outcome = try StepRunner.run(kind: claim.kind, context)
            } catch where !StepFailure.isRetryable(error) {
                return .discard(error: String(describing: error))
            }
            switch outcome {
            case let .completed(output):
                PausePoint.reach("\(claim.kind).before-finalize")
                let jobOutput = StepRecord.jobOutput(output, input: claim.input, ancestors: ancestors)
                let digests = jobOutput["digests"] ?? .null
                let finalize = output.finalize
                // What the step's bits depend on beyond its inputs, read after the body set its thread count.
                let arithmetic = NightlyRun.multipliesMatrices(claim.kind)
                    ? try JSON.decode(JSONValue.self, from: JSON.canonical(StepBaseWeights.recorded(
                        BLASArithmetic.current(threads: BLAS.threads),
                        storage: try StepBaseWeights.storage(input: claim.input, step: claim.name, kind: claim.kind), input: claim.input)),
                                      context: "arithmetic")
                    : nil
                return .completed(jobOutput, alsoInTransaction: { db in
                    try recordInManifest(run: claim.runID, section: NightlyRun.digestsSection, key: claim.name, value: digests, in: db)
                    if let arithmetic {
                        try recordInManifest(run: claim.runID, section: NightlyRun.arithmeticSection, key: claim.name,
                                             value: arithmetic, in: db)
                    }
                    try finalize?(db)
                }, afterCommit: output.afterCommit)
            case let .deferred(reason, after):
                try job.progress((after == 0 ? "yielded: " : "deferred: ") + reason)
                return .snooze(untilMilliseconds: queue.clock.nowMilliseconds() + after)
            }
        }
    }

    /// The output of the nearest succeeded ancestor of each kind.
    public static func ancestorOutputs(queue: any JobEngine, job: JobID) throws -> [String: JSONValue] {
        try nearestSucceededAncestors(queue: queue, job: job).compactMapValues(\.output)
    }

    /// The nearest succeeded ancestor of each kind, breadth first from the job's parents (replay walks the
    /// graph the same way the worker does).
    public static func nearestSucceededAncestors(queue: any JobEngine, job: JobID) throws -> [String: JobRecord] {
        var found: [String: JobRecord] = [:]
        var seen: Set<JobID> = [job]
        var frontier = try queue.parents(of: job)
        while !frontier.isEmpty {
            var next: [JobID] = []
            for id in frontier.sorted() where seen.insert(id).inserted {
                let record = try queue.job(id)
                if found[record.kind] == nil, record.state == .succeeded { found[record.kind] = record }
                next += try queue.parents(of: id)
            }
            frontier = next
        }
        return found
    }

    /// Records a step's digests in its run's manifest, inside the completion's transaction on either backend.
    static func recordInManifest(run: RunID, section: String, key: String, value: JSONValue, in connection: any SQLConnection) throws {
        switch connection {
        case let database as Database:
            _ = try JobQueue.recordInManifest(run: run, section: section, key: key, value: value, in: database)
        case let postgres as PostgresConnection:
            _ = try PostgresJobQueue.recordInManifest(run: run, section: section, key: key, value: value, in: postgres)
        default:
            preconditionFailure("a job engine's connection is SQLite's or PostgreSQL's")
        }
    }
}
