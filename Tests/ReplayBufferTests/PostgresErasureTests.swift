import AdaptCore
import Foundation
import ReplayBuffer
import Storage
import Testing
import TestSupport

/// Erasure on PostgreSQL, where there is no secure_delete: a deleted row stays in its page until the table is
/// rewritten. These read the database's own files in the throwaway cluster's data directory, after a
/// CHECKPOINT has written the shared buffers out, to show where erased text is and is not.
@Suite struct PostgresErasureTests {
    /// Every file of the fixture's database (`base/OID` in the data directory), read after a checkpoint.
    static func databaseFiles(_ fixture: BufferFixture) throws -> [Data] {
        let database = fixture.store.database
        try database.execute("CHECKPOINT")
        let oid = try #require(try database.scalar("SELECT oid FROM pg_database WHERE datname = current_database()").integerValue)
        let directory = try PostgresCluster.shared().dataDirectory + "/base/\(oid)"
        return try FileManager.default.contentsOfDirectory(atPath: directory)
            .map { try Data(contentsOf: URL(fileURLWithPath: directory + "/" + $0)) }
    }

    static func found(_ text: String, in files: [Data]) -> Bool {
        files.contains { $0.range(of: Data(text.utf8)) != nil }
    }

    /// A word nothing else in the cluster holds, `count` hexadecimal digits long (random, so TOAST cannot
    /// compress a long one out of sight).
    static func marker(_ count: Int) -> String {
        var text = ""
        while text.utf8.count < count { text += UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased() }
        return String(text.prefix(count))
    }

    /// Imports one example per completion into `mail`; returns their ids in the same order.
    static func importCompletions(_ completions: [String], into fixture: BufferFixture) throws -> [String] {
        let lines = completions.enumerated().map { #"{"prompt": "question \#($0.offset)", "completion": "\#($0.element)"}"# }
        _ = try fixture.store.importJSONL(Data(lines.joined(separator: "\n").utf8), lineage: "mail")
        let byCompletion = Dictionary(uniqueKeysWithValues: try fixture.store.examples().map { ($0.completion, $0.id) })
        return try completions.map { try #require(byCompletion[$0]) }
    }

    @Test func erasedTextLeavesTheDatabaseFilesWhenTheTablesAreRewrittenAndNotBefore() throws {
        let fixture = try BufferFixture(.postgres)
        // A short one stored in the row, one long enough to be stored out of line (TOAST), and one that stays.
        let (short, long, kept) = (Self.marker(40), Self.marker(6_000), Self.marker(40))
        let ids = try Self.importCompletions([short, long, kept], into: fixture)
        #expect(Self.found(short, in: try Self.databaseFiles(fixture)), "the scan finds text that is stored")
        #expect(Self.found(String(long.prefix(64)), in: try Self.databaseFiles(fixture)))

        let report = try fixture.store.eraseRows(.ids([ids[0], ids[1]]))
        #expect(report.examples == 2)
        #expect(try fixture.store.examples().map(\.completion) == [kept], "no query finds the erased text")
        #expect(Self.found(short, in: try Self.databaseFiles(fixture)), "a committed DELETE leaves the row in its page")

        #expect(fixture.store.purgeDeletedText())
        let files = try Self.databaseFiles(fixture)
        for text in [short, String(long.prefix(64)), String(long.suffix(64)), ids[0], ids[1]] {
            #expect(!Self.found(text, in: files), "erased text or id left in the database's files")
        }
        #expect(Self.found(kept, in: files) && Self.found(ids[2], in: files), "the kept example was rewritten away")
    }

    @Test func anotherSessionsOpenSnapshotMakesThePurgeSaySoUntilItEnds() throws {
        let fixture = try BufferFixture(.postgres)
        let (erased, kept) = (Self.marker(40), Self.marker(40))
        let ids = try Self.importCompletions([erased, kept], into: fixture)
        // Another host's transaction that began before the erasure could still read the row, so VACUUM FULL keeps it.
        let other = try PostgresConnection(try #require(fixture.connectionString))
        try other.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        _ = try other.scalar("SELECT 1")

        _ = try fixture.store.eraseRows(.id(ids[0]))
        #expect(!fixture.store.purgeDeletedText())
        #expect(Self.found(erased, in: try Self.databaseFiles(fixture)))

        try other.execute("COMMIT")
        #expect(try fixture.store.erase(.id(ids[0])).examples == 0, "nothing left to erase")
        #expect(fixture.store.purgeDeletedText())
        #expect(!Self.found(erased, in: try Self.databaseFiles(fixture)))
    }

    @Test func theExampleTextCollectsNoStatisticsThatWouldOutliveItsErasure() throws {
        let fixture = try BufferFixture(.postgres)
        _ = try Self.importCompletions((0..<20).map { _ in Self.marker(24) }, into: fixture)
        try fixture.store.database.execute("ANALYZE replay_examples")
        let columns = Set(try fixture.store.database.query("SELECT attname FROM pg_stats WHERE tablename = 'replay_examples'")
            .compactMap { $0.string("attname") })
        #expect(columns.contains("id") && columns.contains("source"), "ANALYZE ran")
        #expect(columns.isDisjoint(with: ["system", "prompt", "completion", "turns"]))
    }
}
