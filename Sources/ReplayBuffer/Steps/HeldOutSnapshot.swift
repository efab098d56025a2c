import AdaptCore
import Foundation

/// A lineage's held-out set as it stands now, encoded exactly as the sample step writes its held-out snapshot
/// (`DatasetSnapshot`, held-out key order), so the digest is the one a night sampled now would record.
///
/// The digest is what a gate report is bound to: the held-out set only grows, so a report made before it grew
/// names another digest and no longer counts at promotion. Nothing is written: no blob, no top-up, no use.
public struct HeldOutSnapshot: Sendable {
    public let digest: Digest
    public let examples: [SnapshotExample]
}

extension ReplayStore {
    /// The held-out examples of `lineage` (none for a lineage without data) and their snapshot digest.
    public func currentHeldOut(lineage: String) throws -> HeldOutSnapshot {
        let examples = try ExampleTable.heldOut(database, lineage: lineage).map(DatasetSnapshot.line)
        return HeldOutSnapshot(digest: Digest.sha256(DatasetSnapshot.encode(examples)), examples: examples)
    }
}
