import AdaptCore
import Storage

/// The prune step's body: deletes the training examples of a lineage whose TTL has passed.
public enum PruneStep {
    /// Deletes every training example of `lineage` with `expires_at <= now` (and its recorded uses) in one
    /// transaction, with SQLite's secure_delete on, together with every blob that held a copy of one (buffer
    /// and dataset snapshots, marked erased for expiry in the same transaction; their files are deleted from
    /// `blobs` right after it commits, and the deleted text is purged: `ReplayStore.purgeDeletedText`). Held-out examples are kept: the
    /// held-out set is pinned to the lineage and only grows (DESIGN.md). The report holds counts only, never
    /// ids or text.
    public static func run(store: ReplayStore, lineage: String, now: Int64, blobs: (any BlobStorage)? = nil) throws -> PruneReport {
        try LineageName.validate(lineage)
        let db = store.database
        var report = try db.replayTransaction { try apply(store: store, lineage: lineage, now: now, in: db) }
        report.freedBytes = try afterCommit(of: report, store: store, blobs: blobs)
        return report
    }

    /// What `run` would delete, without deleting anything (the pipeline's prune step: the deletion itself
    /// happens in its job's completion, `apply`, and the files go in `afterCommit`).
    public static func plan(store: ReplayStore, lineage: String, now: Int64) throws -> PruneReport {
        try plan(store: store, lineage: lineage, now: now) { _ in () }.report
    }

    /// `plan`, then `follow` in the same rehearsal, on the database as the deletion leaves it (what the caller's
    /// own writes in the completion would do after it, e.g. retiring the adapters trained on expired text); both
    /// are rolled back.
    public static func plan<T>(store: ReplayStore, lineage: String, now: Int64,
                               then follow: (PruneReport) throws -> T) throws -> (report: PruneReport, followed: T) {
        try LineageName.validate(lineage)
        return try store.database.rehearse {
            let report = try delete(store, lineage: lineage, now: now)
            return (report, try follow(report))
        }
    }

    /// The database half of `run`, inside the caller's transaction on `db` (a job's completion transaction,
    /// on the store's own connection).
    public static func apply(store: ReplayStore, lineage: String, now: Int64, in db: any SQLConnection) throws -> PruneReport {
        try LineageName.validate(lineage)
        precondition(db === store.database, "a prune applies on the connection of its store")
        return try ReplayStore.securely(db) { try db.replayTransaction { try delete(store, lineage: lineage, now: now) } }
    }

    /// The file half of `run`, once `apply` committed: deletes the files of erased blobs and, when examples
    /// went, purges their text from the database's files. Returns the bytes freed.
    @discardableResult
    public static func afterCommit(of report: PruneReport, store: ReplayStore, blobs: (any BlobStorage)?) throws -> Int64 {
        let freed = try blobs.map { try store.sweepErasedBlobs($0) } ?? 0
        if report.deleted > 0 { store.purgeDeletedText() }
        return freed
    }

    private static func delete(_ store: ReplayStore, lineage: String, now: Int64) throws -> PruneReport {
        let db = store.database
        let expired = try ExampleTable.expiredIDs(db, lineage: lineage, now: now)
        // Read before the rows go: their blob records go with them.
        let holding = try store.blobs(holding: expired)
        let erasure = try store.eraseRows(ids: expired, because: .expiry)
        var report = PruneReport(lineage: lineage, deleted: erasure.examples,
                                 remainingTrain: try ExampleTable.count(db, lineage: lineage, split: .train),
                                 remainingHeldOut: try ExampleTable.count(db, lineage: lineage, split: .heldOut),
                                 now: now, erasedBlobs: erasure.blobs.count)
        report.snapshotsHoldingExpired = holding
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
    /// Every recorded snapshot that held an expired example, erased now or before (by `data forget`): the adapter
    /// versions trained on one of them carry expired text (`AdapterRegistry.versions(trainedOn:)`).
    public var snapshotsHoldingExpired: Set<Digest> = []

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

    /// Whether `other` deleted the same examples and left the same counts (the erasure counts aside, which
    /// depend on which snapshots were recorded when).
    public func deletesTheSameRows(as other: PruneReport) -> Bool {
        (lineage, deleted, remainingTrain, remainingHeldOut, now)
            == (other.lineage, other.deleted, other.remainingTrain, other.remainingHeldOut, other.now)
    }

    /// The erasure counts are not encoded: they depend on earlier nights' snapshots, not on this prune's
    /// inputs (the prune step reports them beside its compared result).
    enum CodingKeys: String, CodingKey {
        case lineage, deleted, now
        case remainingTrain = "remaining_train", remainingHeldOut = "remaining_held_out"
    }
}
