import Storage

/// The prune step's body: deletes the training examples of a lineage whose TTL has passed.
public enum PruneStep {
    /// Deletes every training example of `lineage` with `expires_at <= now` (and its recorded uses) in one
    /// transaction, with SQLite's secure_delete on. Held-out examples are kept: the held-out set is pinned to the
    /// lineage and only grows (DESIGN.md). The report holds counts only, never ids or text.
    public static func run(store: ReplayStore, lineage: String, now: Int64) throws -> PruneReport {
        try LineageName.validate(lineage)
        let db = store.database
        return try db.transaction { try apply(lineage: lineage, now: now, in: db) }
    }

    /// What `run` would delete, without deleting anything (the pipeline's prune step: the deletion itself
    /// happens in its job's completion, `apply`).
    public static func plan(store: ReplayStore, lineage: String, now: Int64) throws -> PruneReport {
        try LineageName.validate(lineage)
        let db = store.database
        return try db.rehearse { try delete(db, lineage: lineage, now: now) }
    }

    /// The deletion of `run`, inside the caller's transaction on `db` (a job's completion transaction).
    public static func apply(lineage: String, now: Int64, in db: Database) throws -> PruneReport {
        try LineageName.validate(lineage)
        return try ReplayStore.securely(db) { try db.transaction { try delete(db, lineage: lineage, now: now) } }
    }

    private static func delete(_ db: Database, lineage: String, now: Int64) throws -> PruneReport {
        let deleted = try ExampleTable.deleteExpired(db, lineage: lineage, now: now)
        return PruneReport(lineage: lineage, deleted: deleted,
                           remainingTrain: try ExampleTable.count(db, lineage: lineage, split: .train),
                           remainingHeldOut: try ExampleTable.count(db, lineage: lineage, split: .heldOut),
                           now: now)
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

    enum CodingKeys: String, CodingKey {
        case lineage, deleted, now
        case remainingTrain = "remaining_train", remainingHeldOut = "remaining_held_out"
    }
}
