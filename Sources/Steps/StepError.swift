import AdaptCore

/// Why a pipeline step (or enqueueing, or replaying a run) could not go on. Descriptions name the value and
/// the way out, never a user's text.
public enum StepError: Error, Equatable, CustomStringConvertible {
    /// A step needs the output of an earlier step of `kind` that its run does not have (or that did not succeed).
    case missingAncestor(step: String, kind: String)
    /// A recorded output lacks a field the next step reads.
    case malformedOutput(step: String, field: String)
    case modelNotFound(name: String)
    /// The base model file does not start with GGUF's magic bytes.
    case notAModel(name: String)
    /// The base model is a GGUF file that cannot be loaded (truncated, a corrupt tensor table, an unsupported
    /// architecture): `reason` is the model reader's sentence.
    case unusableModel(name: String, reason: String)
    /// The base model file changed since the run was enqueued.
    case modelChanged(name: String, expected: Digest, actual: Digest)
    /// No worker body exists for this job kind.
    case unknownKind(String)
    /// The run has no manifest field `field` (it was not enqueued by `adapt enqueue nightly`).
    case notAPipelineRun(run: String, field: String)
    /// The incumbent the eval step compared against is no longer the active version.
    case incumbentMoved(lineage: String, expected: String, actual: String)
    /// The registry numbered the candidate differently from what the step computed before committing.
    case versionRace(lineage: String, expected: Int, actual: Int)
    case adapterForAnotherModel(adapter: String, expected: Digest, actual: Digest)
    case replayNotPossible(run: String, reason: String)
    /// Tonight's sample holds no training example.
    case nothingToTrain(lineage: String)
    /// The step's input is one no checked pipeline could have produced (`StepInputCheck`); `problems` are its
    /// sentences. Nothing was read or changed.
    case invalidInput(step: String, kind: String, problems: [String])
    /// The replay buffer changed between the step's work and its completion, so its writes (prune's deletions,
    /// sample's recorded uses) would no longer match its output: nothing was recorded.
    case bufferChanged(step: String, lineage: String)
    /// The adapter versions a prune would list or retire for its expired examples changed between its work and its
    /// completion (a version registered or retired meanwhile): nothing was recorded.
    case expiredAdaptersChanged(step: String, lineage: String)
    /// A blob the run read was erased (`data forget`) or expired (TTL): the step cannot run, the run cannot be
    /// replayed.
    case inputErased(run: String, step: String, field: String, sentence: String)
    /// A step of the run was recorded under other arithmetic than it would run with here (another OpenBLAS
    /// core type or version, thread count or architecture): its bits cannot match, so a replay by bits is refused.
    case arithmeticDiffers(run: String, RunReplay.ArithmeticDifference)
    /// The run's manifest names a held-out rule (`held_out_rule`) this version does not know.
    case unknownHeldOutRule(String)

    /// False for problems no retry can fix (the run was not made by the pipeline, an earlier step's output is
    /// missing, a kind or schedule is unknown): the step is discarded at once instead of retried.
    ///
    /// The base model's problems are retried on purpose: the file is the host's, not the run's. Workers on
    /// several hosts share one PostgreSQL database, and another host's file may be the one the run was enqueued
    /// with; on one host, a file restored during the backoff lets the step go on. Their messages say so.
    public var isRetryable: Bool {
        switch self {
        case .missingAncestor, .malformedOutput, .unknownKind, .notAPipelineRun, .replayNotPossible,
             .nothingToTrain, .invalidInput, .inputErased, .unknownHeldOutRule, .arithmeticDiffers:
            return false
        case .modelNotFound, .notAModel, .unusableModel, .modelChanged, .incumbentMoved, .versionRace, .adapterForAnotherModel,
             .bufferChanged, .expiredAdaptersChanged:
            return true
        }
    }

    public var description: String {
        switch self {
        case let .missingAncestor(step, kind):
            return "step \(step) needs the output of an earlier \(kind) step, which its run does not have; enqueue runs with 'adapt enqueue nightly'"
        case let .malformedOutput(step, field):
            return "the recorded output of step \(step) has no usable '\(field)'; retry that step ('adapt retry JOB')"
        case let .modelNotFound(name):
            return "base model \(name) is neither a file nor a model in the state's models/ directory; run scripts/fetch-model or pass --model"
        case let .notAModel(name):
            return "base model \(name) is not a GGUF file (it does not start with the bytes \"GGUF\"); pass a .gguf model file or run scripts/fetch-model"
        case let .unusableModel(name, reason):
            return "base model \(name) cannot be loaded: \(reason)"
        case let .modelChanged(name, expected, actual):
            return "base model \(name) has digest \(actual.short), but the run was enqueued with \(expected.short); restore that file or enqueue a new run "
                + "(the step is retried: a worker on another host, or this one once the file is restored, can run it)"
        case let .unknownKind(kind):
            return "no step body for job kind '\(kind)'; the pipeline kinds are prune, sample, train, eval, promote"
        case let .notAPipelineRun(run, field):
            return "\(run) has no '\(field)' in its manifest: it was not enqueued by 'adapt enqueue nightly'"
        case let .incumbentMoved(lineage, expected, actual):
            return "the active adapter of \(lineage) moved from \(expected) to \(actual) after the eval step compared against it; retry the eval step"
        case let .versionRace(lineage, expected, actual):
            return "registering the candidate of \(lineage) produced v\(actual) instead of v\(expected) (another registration raced it); the step will retry"
        case let .adapterForAnotherModel(adapter, expected, actual):
            return "adapter \(adapter) was trained on base model \(actual.short), not \(expected.short); roll the lineage back or train a new adapter"
        case let .nothingToTrain(lineage):
            return "the sample step drew no training example of \(lineage) tonight (none imported, all expired, all spent their budget, or all held out while the lineage is below the gate's minimum: see 'adapt data stats'); import data with 'adapt data import' and enqueue another night"
        case let .invalidInput(step, kind, problems):
            return "the input of \(kind) step \(step) is not valid, so nothing was changed: \(problems.joined(separator: "; ")); "
                + "enqueue pipeline runs with 'adapt enqueue nightly' from a pipeline that 'adapt pipeline check' accepts"
        case let .bufferChanged(step, lineage):
            return "the replay buffer of \(lineage) changed while step \(step) ran, so nothing it did was recorded; the step will run again on the new buffer"
        case let .expiredAdaptersChanged(step, lineage):
            return "the adapter versions of \(lineage) trained on expired examples changed while step \(step) ran, so nothing it did was recorded; the step will run again"
        case let .inputErased(run, step, field, sentence):
            return "\(run) cannot be run or replayed: the \(field) of step \(step) is gone (\(sentence)); "
                + "its text was removed by design, so only runs enqueued since can be replayed"
        case let .replayNotPossible(run, reason):
            return "\(run) cannot be replayed: \(reason)"
        case let .arithmeticDiffers(run, difference):
            return "\(run) cannot be replayed bit for bit here: step \(difference.step) was recorded under other arithmetic "
                + "(\(difference.fields.joined(separator: ", ")): \(difference.reason))"
                + (difference.notPinned.map { " and was not pinned to the recorded kernels: \($0)" } ?? "") + "; "
                + "replay with --tolerance X to compare its losses and NLLs within X instead of its digests"
        case let .unknownHeldOutRule(rule):
            return "the run's manifest names held-out rule \(rule), which this version of adapt does not know; "
                + "run or replay it with the version that enqueued it"
        }
    }
}
