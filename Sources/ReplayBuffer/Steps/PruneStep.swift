import AdaptCore
import Storage

/// The prune step's body: deletes the training examples of a lineage whose TTL has passed.
public enum PruneStep {
    /// Deletes every training example of `lineage` with `expires_at <= now` (and its recorded uses) in one
    /// transaction, with SQLite's secure_delete on, together with every blob that held a copy of one (buffer
    /// and dataset snapshots, marked erased for expiry in the same transaction; their files are deleted from
    /// `blobs` right after it commits, and the write-ahead log is truncated). Held-out examples are kept: the
    /// held-out set is pinned to the lineage and only grows (DESIGN.md). The report holds counts only, never
    /// ids or text.
    public static func run(store: ReplayStore, lineage: String, now: Int64, blobs: BlobStore? = nil) throws -> PruneReport {
        try LineageName.validate(lineage)
        let db = store.database
        var (report, erasure) = try ReplayStore.securely(db) {
            try db.transaction {
                let expired = try ExampleTable.expiredIDs(db, lineage: lineage, now: now)
                let erasure = try store.eraseRows(ids: expired, because: .expiry)
                return (PruneReport(lineage: lineage, deleted: erasure.examples,
                                    remainingTrain: try ExampleTable.count(db, lineage: lineage, split: .train),
                                    remainingHeldOut: try ExampleTable.count(db, lineage: lineage, split: .heldOut),
                                    now: now, erasedBlobs: erasure.blobs.count), erasure)
            }
        }
        if let blobs { erasure.freedBytes = try store.sweepErasedBlobs(blobs) }
        if erasure.examples > 0 { store.truncateWAL() }
        report.freedBytes = erasure.freedBytes
        return report
    }
}

/// What a prune did; the job's output.
public struct PruneReport: Sendable, Equatable, Codable {
    public let lineage: String
    public let deleted: Int
    public let remainingTrain: Int
    public let remainingHeldOut: Int
    /// The time expiry was measured against (milliseconds since the epoch).
    public let now: Int64
    /// Snapshot blobs erased because they held an expired example.
    public var erasedBlobs: Int = 0
    /// Bytes their files held.
    public var freedBytes: Int64 = 0

    public init(lineage: String, deleted: Int, remainingTrain: Int, remainingHeldOut: Int, now: Int64,
                erasedBlobs: Int = 0, freedBytes: Int64 = 0) {
        self.lineage = lineage
        self.deleted = deleted
        self.remainingTrain = remainingTrain
        self.remainingHeldOut = remainingHeldOut
        self.now = now
        self.erasedBlobs = erasedBlobs
        self.freedBytes = freedBytes
    }

    /// The erasure counts are not encoded: they depend on earlier nights' snapshots, not on this prune's
    /// inputs (the prune step reports them beside its compared result).
    enum CodingKeys: String, CodingKey {
        case lineage, deleted, now
        case remainingTrain = "remaining_train", remainingHeldOut = "remaining_held_out"
    }
}
