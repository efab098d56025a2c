import AdaptCore
import Foundation

/// Blobs in a PostgreSQL database, for hosts that share only the database and no disk.
///
/// A blob is one row of `blobs` (digest, size, chunk count) and its bytes are rows of `blob_chunks`, at most
/// `chunkSize` bytes each, written in one transaction: a blob is there whole or not at all. Every read rehashes
/// what it read, so a damaged or missing chunk is `CoreError.blobCorrupt`, never other bytes.
public struct PostgresBlobStore: BlobStorage {
    public let connection: PostgresConnection
    public let chunkSize: Int
    public let clock: any Clock

    /// 1 MiB: small enough that a chunk is cheap to send and to hold twice (as its hex text and as bytes) while
    /// reading, large enough that an adapter is a handful of rows.
    public static let defaultChunkSize = 1 << 20

    /// Opens the store on `connection`, creating or upgrading its tables.
    public init(connection: PostgresConnection, chunkSize: Int = defaultChunkSize, clock: any Clock = SystemClock()) throws {
        precondition(chunkSize > 0, "a chunk holds at least one byte")
        try connection.migrate(Self.schema)
        self.init(migrated: connection, chunkSize: chunkSize, clock: clock)
    }

    private init(migrated connection: PostgresConnection, chunkSize: Int, clock: any Clock) {
        self.connection = connection
        self.chunkSize = chunkSize
        self.clock = clock
    }

    /// The same store through `other` (already migrated), e.g. a connection inside a job's completion, so the
    /// blob commits or rolls back with the rows that refer to it.
    public func on(_ other: PostgresConnection) -> PostgresBlobStore {
        PostgresBlobStore(migrated: other, chunkSize: chunkSize, clock: clock)
    }

    /// Stores `data` unless the same bytes are already there, intact; a stored copy that no longer hashes to its
    /// digest is rewritten from `data`, so storing the bytes again repairs it (as `BlobStore.put` does).
    @discardableResult
    public func put(_ data: Data) throws -> Digest {
        let digest = Digest.sha256(data)
        let chunks = (data.count + chunkSize - 1) / chunkSize
        try connection.transaction {
            // A concurrent put of the same digest waits here on the key until the first one commits or rolls back.
            let fresh = try connection.query(
                "INSERT INTO blobs (digest, size, chunks, stored_at) VALUES (?, ?, ?, ?) ON CONFLICT (digest) DO NOTHING RETURNING digest",
                digest, data.count, chunks, clock.nowMilliseconds())
            if fresh.isEmpty {
                // Locked, so two puts repairing the same blob do not interleave their chunks.
                _ = try connection.query("SELECT 1 FROM blobs WHERE digest = ? FOR UPDATE", digest)
                do {
                    _ = try get(digest)
                    try connection.run("UPDATE blobs SET stored_at = ? WHERE digest = ?", clock.nowMilliseconds(), digest)
                    return
                } catch is CoreError {
                    // Damaged: rewritten below. Any other error (the server's) ends the put.
                }
                try connection.run("DELETE FROM blob_chunks WHERE digest = ?", digest)
                try connection.run("UPDATE blobs SET size = ?, chunks = ?, stored_at = ? WHERE digest = ?",
                                   data.count, chunks, clock.nowMilliseconds(), digest)
            }
            for index in 0..<chunks {
                let start = data.startIndex + index * chunkSize
                let bytes = Data(data[start..<min(start + chunkSize, data.endIndex)])
                try connection.run("INSERT INTO blob_chunks (digest, seq, bytes) VALUES (?, ?, ?)", digest, index, bytes)
            }
        }
        return digest
    }

    public func get(_ digest: Digest) throws -> Data {
        // One statement, so the header and the chunks come from one snapshot.
        let rows = try connection.query("""
            SELECT b.size, b.chunks, c.seq, c.bytes FROM blobs b LEFT JOIN blob_chunks c ON c.digest = b.digest
            WHERE b.digest = ? ORDER BY c.seq
            """, digest)
        guard let header = rows.first, let size = header.int("size") else { throw CoreError.blobMissing(digest) }
        var data = Data(capacity: size)
        for row in rows { if let bytes = row.data("bytes") { data.append(bytes) } }
        // A missing, reordered or altered chunk changes the hash; the digest is the one check that covers them all.
        let actual = Digest.sha256(data)
        guard actual == digest, data.count == size else { throw CoreError.blobCorrupt(expected: digest, actual: actual) }
        return data
    }

    public func contains(_ digest: Digest) throws -> Bool {
        try connection.queryOne("SELECT 1 FROM blobs WHERE digest = ?", digest) != nil
    }

    @discardableResult
    public func delete(_ digest: Digest) throws -> Int64? {
        try connection.queryOne("DELETE FROM blobs WHERE digest = ? RETURNING size", digest)?.int64("size")
    }

    /// Every stored blob with its size and when it was last stored (milliseconds since the epoch), by digest.
    public func listing() throws -> [(digest: Digest, size: Int64, storedMilliseconds: Int64)] {
        try connection.query("SELECT digest, size, stored_at FROM blobs ORDER BY digest", arguments: []).compactMap { row in
            guard let digest = row.digest("digest"), let size = row.int64("size"), let stored = row.int64("stored_at") else { return nil }
            return (digest, size, stored)
        }
    }

    /// Rewrites the tables into new files holding only the live rows, so the bytes of deleted blobs (a
    /// snapshot may hold user text) do not stay in the database's files; call it outside any transaction,
    /// after deletions commit. False when a deleted row may have been kept (`rewriteWithoutDeletedRows`).
    @discardableResult
    public func purgeDeletedBytes() -> Bool {
        connection.rewriteWithoutDeletedRows(["blob_chunks", "blobs"])
    }

    /// The tables (component `blobs`): `blobs`, one row per blob; `blob_chunks`, its bytes in order.
    public static let schema = Schema(component: "blobs", migrations: [
        """
        CREATE TABLE blobs (
            digest TEXT PRIMARY KEY CHECK (digest ~ '^[0-9a-f]{64}$'),
            size BIGINT NOT NULL CHECK (size >= 0),
            chunks INTEGER NOT NULL CHECK (chunks >= 0),
            stored_at BIGINT NOT NULL
        );
        CREATE TABLE blob_chunks (
            digest TEXT NOT NULL REFERENCES blobs (digest) ON DELETE CASCADE,
            seq INTEGER NOT NULL CHECK (seq >= 0),
            bytes BYTEA NOT NULL,
            PRIMARY KEY (digest, seq)
        );
        -- Out of line but not compressed: adapters and checkpoints are mostly float bits (and checkpoints are
        -- already zstd), which TOAST's compressor would spend time on for nothing.
        ALTER TABLE blob_chunks ALTER COLUMN bytes SET STORAGE EXTERNAL;
        """,
    ])
}
