import AdaptCore
import Foundation
import Registry
import ReplayBuffer
import Storage

/// `adapt gc` on a PostgreSQL database: deletes the rows of its `blobs` table (and their chunks) that nothing
/// owns, by `BlobCollector`'s rules: the same owners (runs' inputs, outputs and manifests, registry versions,
/// checkpoint pointers of unfinished jobs), erased blobs deleted whoever names them, unowned blobs younger
/// than the longest lease in use (at least two minutes) kept, and the same report.
///
/// A blob is put in the transaction that records it (a promotion's adapter commits with its version), but a
/// put outside one can still be followed by its owner's commit, so the collector locks the blob table against
/// writers before it reads the owners: a put waits until the collector commits, and a transaction that put a
/// blob and records it commits before the collector starts reading.
public struct PostgresBlobCollector {
    public let connection: PostgresConnection

    public init(connection: PostgresConnection) {
        self.connection = connection
    }

    /// The grace period: the longest lease any unfinished job records or holds, at least two minutes.
    public func defaultGraceMilliseconds() throws -> Int64 {
        guard try tableExists("jobs") else { return BlobCollector.minimumGraceMilliseconds }
        let recorded = try connection.scalar("""
            SELECT max(greatest(coalesce(lease_ms, 0), coalesce(lease_expires_at - coalesce(heartbeat_at, updated_at), 0)))
            FROM jobs WHERE state IN ('pending', 'ready', 'running', 'failed')
            """).integerValue ?? 0
        return max(BlobCollector.minimumGraceMilliseconds, Int64(recorded))
    }

    /// Every digest something owns.
    func owned() throws -> Set<Digest> {
        var found = Set<Digest>()
        func collect(_ text: String?) {
            guard let text, let value = try? JSON.decode(JSONValue.self, from: text, context: "a stored document") else { return }
            BlobCollector.digests(in: value, into: &found)
        }
        if try tableExists("jobs") {
            for row in try connection.query("SELECT input, output FROM jobs", arguments: []) {
                collect(row.string("input"))
                collect(row.string("output"))
            }
            // Only an unfinished job's pointer names a checkpoint a resumed step would read.
            for row in try connection.query("""
                SELECT checkpoint_pointer FROM jobs
                WHERE checkpoint_pointer IS NOT NULL AND state IN ('pending', 'ready', 'running', 'failed')
                """, arguments: []) {
                collect(row.string("checkpoint_pointer"))
            }
            for row in try connection.query("SELECT manifest FROM job_runs", arguments: []) { collect(row.string("manifest")) }
        }
        if try tableExists("registry_versions") {
            for row in try connection.query("SELECT adapter_digest FROM registry_versions", arguments: []) {
                if let digest = row.digest("adapter_digest") { found.insert(digest) }
            }
        }
        // A pruned version's file is owned by nothing, though its night's train step still names it.
        return found.subtracting(try AdapterRegistry.digestsOnlyPrunedVersionsHold(in: connection))
    }

    private func tableExists(_ name: String) throws -> Bool {
        try connection.scalar("SELECT to_regclass(CAST(? AS text)) IS NOT NULL", name).integerValue == 1
    }

    /// Deletes (or with `dryRun` only counts) the unowned blobs older than `graceMilliseconds` (default:
    /// `defaultGraceMilliseconds`), and every erased one; when erased blobs were deleted, the blob tables are
    /// rewritten so their bytes leave the database's files (`PostgresBlobStore.purgeDeletedBytes`).
    public func collect(dryRun: Bool = false, graceMilliseconds: Int64? = nil,
                        now: Int64 = SystemClock().nowMilliseconds()) throws -> BlobCollector.Report {
        let grace = try graceMilliseconds ?? defaultGraceMilliseconds()
        var report = BlobCollector.Report()
        report.graceSeconds = Double(grace) / 1000
        report.dryRun = dryRun
        // A database that never stored a blob has no blob tables; a dry run does not create them.
        guard try connection.schemaVersion(of: PostgresBlobStore.schema.component) > 0 || !dryRun else { return report }
        let blobs = try PostgresBlobStore(connection: connection)
        try connection.transaction {
            // SHARE ROW EXCLUSIVE: readers go on, writers (puts) and a second collector wait for the commit.
            if !dryRun { try connection.execute("LOCK TABLE blobs IN SHARE ROW EXCLUSIVE MODE") }
            let owned = try owned()
            let erased = Set(try ReplayStore.erasedBlobs(in: connection))
            let stored = try blobs.listing().map {
                BlobCollector.StoredBlob(digest: $0.digest, size: $0.size, storedMilliseconds: $0.storedMilliseconds)
            }
            try BlobCollector.sweep(stored, owned: owned, erased: erased, grace: grace, now: now, into: &report) { digest in
                if !dryRun { try blobs.delete(digest) }
            }
        }
        guard !dryRun else { return report }
        if try tableExists("replay_blobs") {
            try ReplayStore(database: connection).dropRecordsOfUnstoredBlobs(stored: Set(try blobs.listing().map(\.digest)))
        }
        if report.erasedDeleted > 0 { blobs.purgeDeletedBytes() }
        return report
    }
}
