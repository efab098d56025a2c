import AdaptCore
import Foundation
import Storage
import Testing
import TestSupport

/// Blobs kept in PostgreSQL: chunked on write, rehashed on every read.
@Suite struct PostgresBlobStoreTests {
    let target: String
    let connection: PostgresConnection
    let clock = ManualClock()

    init() throws {
        target = try PostgresCluster.shared().makeDatabase()
        connection = try PostgresConnection(target)
    }

    /// Bytes that differ at every position, so a chunk out of place changes the hash.
    static func bytes(_ count: Int, seed: UInt8 = 1) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) &+ seed })
    }

    @Test func aBlobLargerThanAChunkComesBackWholeFromItsChunks() throws {
        let store = try PostgresBlobStore(connection: connection, chunkSize: 1000, clock: clock)
        let data = Self.bytes(4321)
        let digest = try store.put(data)
        #expect(digest == Digest.sha256(data))
        #expect(try store.contains(digest))
        #expect(try store.get(digest) == data)
        #expect(try connection.scalar("SELECT count(*) FROM blob_chunks WHERE digest = ?", digest) == .integer(5))
        #expect(try connection.scalar("SELECT max(length(bytes)) FROM blob_chunks") == .integer(1000))
        // The default chunk size, on a blob of two and a half chunks.
        let large = Self.bytes(PostgresBlobStore.defaultChunkSize * 5 / 2, seed: 9)
        let big = try PostgresBlobStore(connection: connection).put(large)
        #expect(try store.get(big) == large)
        #expect(try connection.scalar("SELECT chunks FROM blobs WHERE digest = ?", big) == .integer(3))
    }

    @Test func theSameBytesStoredTwiceAreWrittenOnce() throws {
        let store = try PostgresBlobStore(connection: connection, chunkSize: 1000, clock: clock)
        let data = Self.bytes(2500)
        let first = try store.put(data)
        let rows = try connection.query("SELECT seq, xmin::text AS version FROM blob_chunks ORDER BY seq").map { $0.string("version") }
        clock.advance(milliseconds: 5000)
        // A second store through another connection, as another host would put them.
        let other = try PostgresBlobStore(connection: try PostgresConnection(target), chunkSize: 1000, clock: clock)
        #expect(try other.put(data) == first)
        #expect(try connection.scalar("SELECT count(*) FROM blobs") == .integer(1))
        #expect(try connection.query("SELECT seq, xmin::text AS version FROM blob_chunks ORDER BY seq").map { $0.string("version") } == rows,
                "the chunks were rewritten")
        // Stored again means stored now: a collector's grace period starts over.
        #expect(try connection.scalar("SELECT stored_at FROM blobs") == .integer(clock.nowMilliseconds()))
    }

    @Test func aDamagedChunkIsRefusedByDigestAndStoringTheBytesAgainRepairsIt() throws {
        let store = try PostgresBlobStore(connection: connection, chunkSize: 1000, clock: clock)
        let data = Self.bytes(3000)
        let digest = try store.put(data)
        var damaged = Self.bytes(1000)
        damaged[17] ^= 0x01
        try connection.run("UPDATE blob_chunks SET bytes = ? WHERE digest = ? AND seq = 0", damaged, digest)
        #expect(throws: CoreError.self) { try store.get(digest) }
        do {
            _ = try store.get(digest)
        } catch let CoreError.blobCorrupt(expected, actual) {
            #expect(expected == digest && actual != digest)
        }
        // A chunk lost is refused the same way, never returned short.
        try connection.run("DELETE FROM blob_chunks WHERE digest = ? AND seq = 1", digest)
        #expect(throws: CoreError.self) { try store.get(digest) }
        #expect(try store.put(data) == digest)
        #expect(try store.get(digest) == data)
    }

    @Test func anEmptyBlobIsStoredAndReadWithoutChunks() throws {
        let store = try PostgresBlobStore(connection: connection, clock: clock)
        let digest = try store.put(Data())
        #expect(digest == Digest.sha256(Data()))
        #expect(try store.get(digest) == Data())
        #expect(try connection.scalar("SELECT count(*) FROM blob_chunks") == .integer(0))
        #expect(try store.put(Data()) == digest)
    }

    @Test func anAbsentBlobIsMissingNotEmpty() throws {
        let store = try PostgresBlobStore(connection: connection, clock: clock)
        let digest = Digest.sha256(Data("never stored".utf8))
        #expect(try !store.contains(digest))
        #expect(throws: CoreError.blobMissing(digest)) { try store.get(digest) }
    }

    @Test func aPutThatRollsBackWithItsCallersTransactionLeavesNoBlob() throws {
        let store = try PostgresBlobStore(connection: connection, chunkSize: 100, clock: clock)
        struct Abandoned: Error {}
        var digest: Digest?
        #expect(throws: Abandoned.self) {
            try connection.transaction {
                digest = try store.put(Self.bytes(450))
                throw Abandoned()
            }
        }
        #expect(try !store.contains(digest!))
        #expect(try connection.scalar("SELECT count(*) FROM blob_chunks") == .integer(0))
    }
}
