import AdaptCore
import Pipelines

/// What the prune step did: how many expired examples it deleted under which TTL, and its clock reading (replay
/// reuses it, so the same buffer prunes the same examples).
public struct PruneOutput: StepResult, Equatable {
    public static let kind = StepKind.prune

    public struct Inputs: Codable, Sendable, Equatable {
        /// The `LineageDump` blob of the buffer before pruning: what replay restores.
        public var bufferSnapshot: Digest

        enum CodingKeys: String, CodingKey { case bufferSnapshot = "buffer_snapshot" }
    }

    public var lineage: String
    /// Milliseconds since the epoch.
    public var now: Int64
    /// The TTL applied: the lineage's, or the pipeline's when shorter.
    public var ttlDays: Int
    public var deleted: Int
    public var remainingTrain: Int
    public var remainingHeldOut: Int
    public var inputs: Inputs

    enum CodingKeys: String, CodingKey {
        case lineage, now, deleted, inputs
        case ttlDays = "ttl_days", remainingTrain = "remaining_train", remainingHeldOut = "remaining_held_out"
    }
}
