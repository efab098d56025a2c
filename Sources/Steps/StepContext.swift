import AdaptCore
import Storage
import Training

/// Everything one execution of a step body sees: its job's input, the run's manifest, the outputs of the
/// steps before it, and ways to report progress and learn that it should stop.
///
/// The worker builds it from a claim; replay builds it from the recorded run, with `recorded` holding the
/// output the original execution produced (prune reuses its clock reading, eval its incumbent), so both run
/// exactly the same body code.
public struct StepContext: Sendable {
    public let environment: StepEnvironment
    /// The step's name in its run (`train`).
    public let name: String
    public let input: JSONValue
    public let manifest: JSONValue
    /// The output of the nearest earlier step of each kind this step depends on, directly or not.
    public let ancestors: [String: JSONValue]
    /// The original output when replaying, nil in a live run.
    public let recorded: JSONValue?
    /// Appends a progress event to the job (fenced by its lease); a no-op in replay.
    public let progress: @Sendable (String) throws -> Void
    /// True once the step must end now: its run was cancelled, its lease lost, or the worker must stop at once.
    public let isCancelled: @Sendable () -> Bool
    /// True once the worker was asked to stop: a long step yields at its next safe point (a checkpoint).
    public let isStopping: @Sendable () -> Bool
    /// Where the train step keeps its checkpoint pointer (its job's row in a live run).
    public let checkpointPointer: any CheckpointPointer
    /// Asks the worker to execute itself again, once this step's deferral is recorded, with OpenBLAS's core type
    /// pinned to the value given (nil: adapt's own choice), so a resumed step computes with its checkpoint's
    /// kernels; nil where the process cannot (replay, in-process tests).
    public let reexecute: (@Sendable (String?) -> Void)?

    public init(environment: StepEnvironment, name: String, input: JSONValue, manifest: JSONValue,
                ancestors: [String: JSONValue], recorded: JSONValue? = nil,
                progress: @escaping @Sendable (String) throws -> Void = { _ in },
                isCancelled: @escaping @Sendable () -> Bool = { false },
                isStopping: @escaping @Sendable () -> Bool = { false },
                checkpointPointer: any CheckpointPointer = MemoryCheckpointPointer(),
                reexecute: (@Sendable (String?) -> Void)? = nil) {
        self.environment = environment
        self.name = name
        self.input = input
        self.manifest = manifest
        self.ancestors = ancestors
        self.recorded = recorded
        self.progress = progress
        self.isCancelled = isCancelled
        self.isStopping = isStopping
        self.checkpointPointer = checkpointPointer
        self.reexecute = reexecute
    }

    /// The job output of the earlier step of `kind`, or `StepError.missingAncestor`; its typed output is
    /// `output(of:)`.
    public func ancestor(_ kind: String) throws -> JSONValue {
        guard let output = ancestors[kind] else { throw StepError.missingAncestor(step: name, kind: kind) }
        return output
    }

    /// A string field of the run's manifest.
    func manifestString(_ path: String...) throws -> String {
        var value: JSONValue? = manifest
        for key in path { value = value?[key] }
        guard let text = value?.stringValue else {
            throw StepError.notAPipelineRun(run: "this run", field: path.joined(separator: "."))
        }
        return text
    }
}

/// How a step body ended.
public enum StepOutcome: Sendable {
    case completed(StepOutput)
    /// Not now (the device policy said so): try again after `retryAfterMilliseconds`, without failing.
    case deferred(reason: String, retryAfterMilliseconds: Int64)
}

/// A finished step's output, split by what replay compares.
public struct StepOutput: Sendable {
    /// Everything the step decided or produced that a replay must reproduce bit for bit.
    public var result: [String: JSONValue]
    /// Digests of what the step read besides its job input and earlier steps' outputs (the base model, the
    /// replay-buffer snapshot, the incumbent adapter).
    public var inputs: [String: JSONValue]
    /// Wall-clock figures (seconds, tokens per second): shown, never compared.
    public var timing: [String: JSONValue]
    /// Registry facts that depend on the registry's whole history (version numbers): shown, never compared.
    public var registry: [String: JSONValue]
    /// Writes that must commit in the same transaction as the job's completion, so that they happen exactly
    /// when it is recorded and never for an attempt that lost its lease: every write a step makes outside the
    /// blob store and its job's own events. Replay applies it in its scratch state.
    public var finalize: (@Sendable (any SQLConnection) throws -> Void)?
    /// What must follow once that transaction is durable and cannot follow a rollback (deleting the files of
    /// blobs `finalize` marked erased).
    public var afterCommit: (@Sendable () -> Void)?

    public init(result: [String: JSONValue], inputs: [String: JSONValue] = [:], timing: [String: JSONValue] = [:],
                registry: [String: JSONValue] = [:], finalize: (@Sendable (any SQLConnection) throws -> Void)? = nil,
                afterCommit: (@Sendable () -> Void)? = nil) {
        self.result = result
        self.inputs = inputs
        self.timing = timing
        self.registry = registry
        self.finalize = finalize
        self.afterCommit = afterCommit
    }
}
