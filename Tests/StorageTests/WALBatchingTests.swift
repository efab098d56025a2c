import Foundation
import Storage
import Testing
import TestSupport

// Connections write their WAL through the batching VFS (Sources/SQLiteWALBatching). These tests hold it to
// what SQLite's default VFS guarantees: another connection sees each commit whole as soon as it returns, and
// the files on disk after a commit (what a crash leaves behind) recover to exactly that commit.

/// Rows of sizes from a few bytes to most of a page, so commits span one page to a few dozen.
private func insertRows(_ db: Database, count: Int, seed: Int) throws -> (rows: Int, bytes: Int) {
    var bytes = 0
    for row in 0..<count {
        let size = (seed * 31 + row * 97) % 900 + 1
        try db.run("INSERT INTO t (body) VALUES (?)", Data(repeating: UInt8(truncatingIfNeeded: seed + row), count: size))
        bytes += size
    }
    return (count, bytes)
}

/// Every row is read, so a page missing from the WAL would fail the read rather than go unnoticed.
private func contents(_ db: Database) throws -> [Int64] {
    let row = try #require(try db.queryOne("SELECT count(*) AS n, coalesce(sum(length(body)), 0) AS bytes FROM t"))
    return [row.int64("n") ?? -1, row.int64("bytes") ?? -1]
}

/// Holds `db` to the rows and bytes committed so far, and to SQLite's own integrity check.
private func expectWhole(_ db: Database, _ expected: (rows: Int, bytes: Int), _ comment: Comment,
                         sourceLocation: SourceLocation = #_sourceLocation) throws {
    #expect(try contents(db) == [Int64(expected.rows), Int64(expected.bytes)], comment, sourceLocation: sourceLocation)
    #expect(try db.scalar("PRAGMA integrity_check") == .text("ok"), comment, sourceLocation: sourceLocation)
}

private struct Abandon: Error {}

@Test func aConnectionWithoutBatchingReadsEveryBatchedCommitAsSoonAsItReturns() throws {
    let dir = TemporaryDirectory()
    let path = dir.file("t.sqlite").path
    let writer = try Database(path: path, durability: .normal)
    try writer.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
    let reader = try Database(path: path, durability: .normal, batchesWALWrites: false)
    var expected = (rows: 0, bytes: 0)
    for commit in 0..<300 {
        let added = try writer.transaction { try insertRows(writer, count: commit % 17 + 1, seed: commit) }
        expected = (expected.rows + added.rows, expected.bytes + added.bytes)
        #expect(try contents(reader) == [Int64(expected.rows), Int64(expected.bytes)],
                "after commit \(commit)")
    }
    #expect(try reader.scalar("PRAGMA integrity_check") == .text("ok"))
}

@Test func afterEveryCommitTheFilesOnDiskRecoverToIt() throws {
    let dir = TemporaryDirectory()
    let path = dir.file("t.sqlite").path
    let writer = try Database(path: path, durability: .normal)
    // A cache of a few pages makes every transaction here spill frames into the WAL before it commits, and
    // the updates then overwrite spilled frames in place, which makes SQLite rewrite their checksums.
    try writer.execute("PRAGMA cache_size=8; CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
    var expected = (rows: 0, bytes: 0)
    for commit in 0..<12 {
        if commit % 4 == 3 {
            // A spilled transaction that rolls back must leave nothing a recovery would take for a commit.
            #expect(throws: Abandon.self) {
                try writer.transaction {
                    _ = try insertRows(writer, count: 80, seed: commit)
                    throw Abandon()
                }
            }
        }
        let added = try writer.transaction {
            let first = try Int(writer.scalar("SELECT coalesce(max(id), 0) + 1 FROM t").integerValue ?? 1)
            let added = try insertRows(writer, count: 70, seed: commit)
            try writer.run("UPDATE t SET body = body WHERE id >= ?", first)
            return added
        }
        expected = (expected.rows + added.rows, expected.bytes + added.bytes)

        // What a crash right now would leave: the database and its WAL as they are on disk, without the
        // shared-memory index, so opening the copy recovers from the WAL's frames and checksums alone.
        let copy = dir.file("copy-\(commit).sqlite").path
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        try FileManager.default.copyItem(atPath: path + "-wal", toPath: copy + "-wal")
        let recovered = try Database(path: copy, durability: .normal, batchesWALWrites: false)
        try expectWhole(recovered, expected, "after commit \(commit)")
    }
}

@Test func aCommitLargerThanOneBatchedWriteArrivesWhole() throws {
    let dir = TemporaryDirectory()
    let path = dir.file("t.sqlite").path
    let writer = try Database(path: path, durability: .full)
    try writer.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
    // About 2 MB in one commit: far more than one batched write (64 KB) and than the page cache.
    let added = try writer.transaction { try insertRows(writer, count: 4_000, seed: 7) }
    let reader = try Database(path: path, batchesWALWrites: false)
    try expectWhole(reader, added, "one 2 MB commit")
}

@Test func framesOfARolledBackTransactionNeverOverwriteAnotherConnectionsCommit() throws {
    // A cache of a few pages makes the transactions below spill frames into the WAL before they roll back;
    // ending them after every number of rows up to 120 ends one right after a spill, with frames held.
    for abandonedRows in 1...120 {
        let dir = TemporaryDirectory()
        let path = dir.file("t.sqlite").path
        let first = try Database(path: path, durability: .normal)
        // With the WAL checkpointed and empty, rolling back reads nothing from it.
        try first.execute("""
            PRAGMA cache_size=8; CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL);
            PRAGMA wal_checkpoint(TRUNCATE)
            """)
        let second = try Database(path: path, durability: .normal)
        #expect(throws: Abandon.self) {
            try first.transaction {
                _ = try insertRows(first, count: abandonedRows, seed: 1)
                throw Abandon()
            }
        }
        // The second connection's commit takes the WAL from where the abandoned frames began.
        let added = try second.transaction { try insertRows(second, count: 30, seed: 2) }
        // The first connection reads it back from the WAL, and a connection without batching sees it too.
        #expect(try contents(first) == [Int64(added.rows), Int64(added.bytes)], "after abandoning \(abandonedRows) rows")
        let reader = try Database(path: path, durability: .normal, batchesWALWrites: false)
        try expectWhole(reader, added, "after abandoning \(abandonedRows) rows")
    }
}
