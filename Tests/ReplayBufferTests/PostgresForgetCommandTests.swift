import AdaptCore
import Foundation
import ReplayBuffer
import Storage
import Testing
import TestSupport

/// `adapt data forget --database postgres://…` through the executable, checked in the database's own files (as
/// `PostgresErasureTests` does for the library): the erased text, in its row and in a snapshot blob kept in the
/// database's blob table, is gone from them once the command returns, while a kept example stays.
@Suite struct PostgresForgetCommandTests {
    /// Every file of `connection`'s database, read after a checkpoint.
    static func databaseFiles(_ connection: PostgresConnection) throws -> [Data] {
        try connection.execute("CHECKPOINT")
        let oid = try #require(try connection.scalar("SELECT oid FROM pg_database WHERE datname = current_database()").integerValue)
        let directory = try PostgresCluster.shared().dataDirectory + "/base/\(oid)"
        return try FileManager.default.contentsOfDirectory(atPath: directory)
            .map { try Data(contentsOf: URL(fileURLWithPath: directory + "/" + $0)) }
    }

    @Test func forgetRemovesTheErasedTextAndItsSnapshotBlobFromTheDatabaseFiles() throws {
        let adapt = try AdaptData(.postgres)
        let (erased, kept, inSnapshot) = (PostgresErasureTests.marker(40), PostgresErasureTests.marker(40),
                                          PostgresErasureTests.marker(3_000))
        let file = try adapt.write("x.jsonl", """
            {"prompt": "q1", "completion": "\(erased)", "source": "gone"}
            {"prompt": "q2", "completion": "\(kept)", "source": "stays"}

            """)
        let imported = try adapt.run(["data", "import", file, "--lineage", "mail"])
        #expect(imported.status == 0, "\(imported.stderr)")

        // A snapshot that copied the erased example, kept in the database as a host without shared files keeps it.
        let connection = try PostgresConnection(adapt.database[1])
        let store = try ReplayStore(database: connection)
        let blobs = try PostgresBlobStore(connection: connection)
        let erasedID = try #require(try store.examples().first { $0.completion == erased }?.id)
        let snapshot = try blobs.put(Data("snapshot of \(inSnapshot)".utf8))
        try store.recordBlob(snapshot, kind: .trainSnapshot, lineage: "mail", exampleIDs: [erasedID])
        let before = try Self.databaseFiles(connection)
        for text in [erased, kept, String(inSnapshot.prefix(64)), String(inSnapshot.suffix(64))] { #expect(PostgresErasureTests.found(text, in: before)) }

        let forgotten = try adapt.json(["data", "forget", "--source", "gone"])
        #expect(forgotten["forgotten"] == .int(1) && forgotten["erased_blobs"] == .int(1), "\(forgotten)")
        #expect(forgotten["tables_rewritten"] == .bool(true) && (forgotten["freed_bytes"]?.intValue ?? 0) > 3_000)
        #expect(try !blobs.contains(snapshot))
        let after = try Self.databaseFiles(connection)
        for text in [erased, erasedID, String(inSnapshot.prefix(64)), String(inSnapshot.suffix(64))] {
            #expect(!PostgresErasureTests.found(text, in: after), "erased text or id left in the database's files")
        }
        #expect(PostgresErasureTests.found(kept, in: after), "the kept example was rewritten away")
    }
}
