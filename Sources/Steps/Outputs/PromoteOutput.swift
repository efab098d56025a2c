import AdaptCore
import Evaluation
import Pipelines

/// The promote step's decision about tonight's candidate. Version numbers depend on the registry's whole
/// history, so they are not part of it: the step reports them under the job output's `registry`.
public struct PromoteOutput: StepResult, Equatable {
    public static let kind = StepKind.promote

    public struct Inputs: Codable, Sendable, Equatable {
        /// The lineage's active adapter when the step ran.
        public var activeAdapter: ComparedAdapter

        enum CodingKeys: String, CodingKey { case activeAdapter = "active_adapter" }
    }

    /// The eval step's outcome.
    public var outcome: GateOutcome
    public var promoted: Bool
    /// `gate_better`, `incumbent_moved`, `gate_not_enough_evidence`, `gate_worse`, `gate_forgets` (the forgetting guard
    /// refused it), or `kept_parent` (training kept
    /// its starting weights: nothing registered).
    public var reason: String
    public var adapterBlob: Digest
    public var inputs: Inputs

    enum CodingKeys: String, CodingKey {
        case outcome, promoted, reason, inputs
        case adapterBlob = "adapter_blob"
    }
}
