import AdaptCore
import Foundation
import Storage

/// What an erasure (`data forget`) or an expiry (the prune step) removed: counts and digests, never text.
public struct ErasureReport: Sendable, Equatable {
    /// Examples deleted from the buffer.
    public var examples: Int = 0
    /// Blobs that held one of them, now erased (their files deleted).
    public var blobs: [Digest] = []
    /// Bytes those files held.
    public var freedBytes: Int64 = 0
    /// SQLite: whether the write-ahead log was checkpointed and truncated afterwards (false when a reader held it).
    public var walTruncated: Bool = false
    /// PostgreSQL: whether the replay tables were rewritten afterwards with nothing able to keep the deleted rows
    /// (false when the rewrite failed or another transaction's snapshot may have kept them; see `purgeDeletedText`).
    public var tablesRewritten: Bool = false

    public init() {}
}

extension ReplayStore {
    /// Records that `blob`, just stored, holds `exampleIDs` of `lineage`. Call it in the transaction that read
    /// those examples, so no erasure can fall between the read and the record. Recorded later (e.g. in a step's
    /// completion transaction), it checks that every example is still stored; if one was erased meanwhile the
    /// blob is deleted from `blobs` and `ReplayError.erasedWhileSnapshotting` thrown, so no copy escapes.
    public func recordBlob(_ blob: Digest, kind: BlobKind, lineage: String, exampleIDs: [String], blobs: (any BlobStorage)? = nil) throws {
        try LineageName.validate(lineage)
        do {
            try database.replayTransaction {
                try BlobContentsTable.record(database, blob: blob, kind: kind, lineage: lineage, exampleIDs: exampleIDs,
                                             now: clock.nowMilliseconds())
            }
        } catch ReplayError.erasedWhileSnapshotting(let short) {
            try blobs?.delete(blob)
            throw ReplayError.erasedWhileSnapshotting(blob: short)
        }
    }

    /// The stored ids `request` names (for `.source`, in one lineage or all).
    public func exampleIDs(for request: ForgetRequest) throws -> [String] {
        switch request {
        case let .id(id): return try ExampleTable.exists(database, id: id) ? [id] : []
        case let .ids(ids): return try Set(ids).sorted().filter { try ExampleTable.exists(database, id: $0) }
        case let .source(source, lineage):
            if let lineage { try LineageName.validate(lineage) }
            return try ExampleTable.ids(database, source: source, lineage: lineage)
        }
    }

    /// The database half of an erasure, for a caller that holds the transaction (and secure_delete, see
    /// `securely`): marks every blob holding one of the examples as erased and deletes the examples (their
    /// uses and blob records go with them). The files are deleted by `sweepErasedBlobs` once this commits, and
    /// the text left in the database's files by `purgeDeletedText`.
    public func eraseRows(_ request: ForgetRequest, because reason: ErasureReason = .forget) throws -> ErasureReport {
        try database.replayTransaction {
            let ids = try exampleIDs(for: request)
            return try eraseRows(ids: ids, because: reason)
        }
    }

    /// `eraseRows` for ids already resolved; the caller holds the transaction (and secure_delete).
    public func eraseRows(ids: [String], because reason: ErasureReason) throws -> ErasureReport {
        try database.replayTransaction {
            var report = ErasureReport()
            report.blobs = try BlobContentsTable.markErased(database, exampleIDs: ids, because: reason, now: clock.nowMilliseconds())
            for id in ids { report.examples += try ExampleTable.delete(database, id: id) }
            return report
        }
    }

    /// Deletes every erased blob still in `blobs` (those of this erasure, and any an earlier one
    /// could not delete: a crash between its commit and its unlink); returns the bytes freed.
    @discardableResult
    public func sweepErasedBlobs(_ blobs: any BlobStorage) throws -> Int64 {
        var freed: Int64 = 0
        for digest in try BlobContentsTable.erased(database) { freed += try blobs.delete(digest) ?? 0 }
        return freed
    }

    /// Checkpoints the write-ahead log into the database file and truncates it, so deleted text does not
    /// linger in old WAL frames; false when another connection's reader kept part of it (or on PostgreSQL).
    @discardableResult
    public func truncateWAL() -> Bool {
        guard database.dialect == .sqlite, let row = try? database.queryOne("PRAGMA wal_checkpoint(TRUNCATE)") else { return false }
        return row.int("busy") == 0
    }

    /// Removes what committed deletions left of the buffer's text in the database's files; call it right after an
    /// erasure or expiry commits, outside any transaction. True when nothing could keep that text.
    ///
    /// SQLite: secure_delete already overwrote the rows; this truncates the write-ahead log (`truncateWAL`).
    /// PostgreSQL: a deleted row stays in its heap page (and its TOAST and index entries) until the table is
    /// vacuumed, and a plain VACUUM frees the space without overwriting it. `VACUUM FULL` writes the tables that
    /// held example text or ids into new files holding only the live rows, and the old files are truncated and
    /// unlinked. It waits for the transactions using those tables and blocks them while it runs. A row some
    /// other open transaction could still see is copied too, so this is false when any other session of the
    /// database (or a prepared transaction or replication slot) held a snapshot as the rewrite began, when the
    /// rewrite kept a deleted row even on a second try (`PostgresConnection.rewriteWithoutDeletedRows`), or when
    /// the tables' locks were not free within 30 s; the next erasure or expiry rewrites the tables again. What PostgreSQL wrote to its write-ahead log, its archive
    /// and its standbys before the erasure stays there: docs/postgresql.md says what remains where.
    @discardableResult
    public func purgeDeletedText() -> Bool {
        switch database.dialect {
        case .sqlite:
            return truncateWAL()
        case .postgres:
            guard let postgres = database as? PostgresConnection, let others = try? database.scalar("""
                SELECT (SELECT count(*) FROM pg_stat_activity
                        WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_xmin IS NOT NULL)
                     + (SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database())
                     + (SELECT count(*) FROM pg_replication_slots WHERE xmin IS NOT NULL)
                """).integerValue else { return false }
            let rewritten = postgres.rewriteWithoutDeletedRows(["replay_examples", "replay_uses", "replay_blob_examples"])
            return others == 0 && rewritten
        }
    }

    /// Every recorded blob that holds one of `exampleIDs` (erased or not).
    public func blobs(holding exampleIDs: [String]) throws -> Set<Digest> {
        try BlobContentsTable.blobs(database, holding: exampleIDs)
    }

    /// Drops the records of unerased blobs the store no longer has (after `adapt gc`).
    @discardableResult
    public func dropRecordsOfUnstoredBlobs(stored: Set<Digest>) throws -> Int {
        try database.replayTransaction { try BlobContentsTable.dropUnstored(database, stored: stored) }
    }
}

extension ReplayStore {
    /// The erasures among `blobs`, read from `database` without migrating it (a read-only command may hold
    /// a read-only connection); empty when the database predates erasure records.
    public static func erasures(of blobs: [Digest], in database: any SQLConnection) throws -> [Digest: BlobErasure] {
        guard try ReplaySchema.hasBlobRecords(database) else { return [:] }
        var found: [Digest: BlobErasure] = [:]
        for blob in Set(blobs) { if let erasure = try BlobContentsTable.erasure(database, blob: blob) { found[blob] = erasure } }
        return found
    }

    /// Every erased blob (read without migrating, like `erasures(of:in:)`).
    public static func erasedBlobs(in database: any SQLConnection) throws -> [Digest] {
        guard try ReplaySchema.hasBlobRecords(database) else { return [] }
        return try BlobContentsTable.erased(database)
    }
}
