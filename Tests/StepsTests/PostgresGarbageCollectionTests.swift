import AdaptCore
import Foundation
import JobQueue
import ReplayBuffer
import Storage
import Testing
import TestSupport

/// `adapt gc` and `prune-history` with `--database postgres://…`: the database's blob table collected by the
/// rules `BlobCollector` applies to the state's files, through the executable.
@Suite struct PostgresGarbageCollectionTests {
    func adapt(_ arguments: [String]) throws -> ProcessResult {
        try Executables.run("adapt", ["--state", directory.file("state").path] + arguments)
    }

    func json(_ arguments: [String]) throws -> JSONValue {
        let result = try adapt(arguments + ["--json"])
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
        return try JSON.decode(JSONValue.self, from: result.stdout, context: "stdout")
    }

    let directory = TemporaryDirectory("adapt-pg-gc")

    @Test func gcDeletesTheUnownedAndTheErasedBlobsAndKeepsTheOwnedAndTheRecentOnes() throws {
        let url = try PostgresCluster.shared().makeDatabase()
        let connection = try PostgresConnection(url)
        let blobs = try PostgresBlobStore(connection: connection)
        let owned = try blobs.put(Data("owned by a run".utf8))
        let unowned = try blobs.put(Data("owned by nothing".utf8))
        let recent = try blobs.put(Data("owned by nothing, stored just now".utf8))
        let erased = try blobs.put(Data("a snapshot of an erased example".utf8))
        // Stored long ago, all but the recent one: only the grace period keeps an unowned blob.
        _ = try connection.run("UPDATE blobs SET stored_at = 0 WHERE digest <> ?", recent)
        let queue = try PostgresJobQueue(connectionString: url)
        _ = try queue.enqueue(RunDescription(kind: "test", steps: [
            .init(name: "uses", kind: NoopJob.kind, input: .object(["dataset": .string(owned.hex), "erased": .string(erased.hex)])),
        ]))
        let store = try ReplayStore(database: connection)
        _ = try store.importJSONL(Data(#"{"prompt": "p", "completion": "c"}"#.utf8), lineage: "mail")
        let id = try #require(try store.examples().first?.id)
        try store.recordBlob(erased, kind: .trainSnapshot, lineage: "mail", exampleIDs: [id])
        _ = try store.eraseRows(.ids([id]))

        let database = ["--database", url]
        let counts = ["deleted_blobs": 2, "freed_bytes": 16 + 31, "kept_blobs": 2, "kept_recent": 1, "erased_deleted": 1]
        let dryRun = try json(database + ["gc", "--dry-run"])
        for (field, value) in counts { #expect(dryRun[field] == .int(value), "\(field): \(dryRun)") }
        #expect(dryRun["grace_seconds"]?.doubleValue == 120 && dryRun["dry_run"] == .bool(true))
        #expect(try blobs.listing().count == 4, "a dry run deleted something")

        let collected = try json(database + ["gc"])
        for (field, value) in counts { #expect(collected[field] == .int(value), "\(field): \(collected)") }
        #expect(collected["dry_run"] == .bool(false))
        #expect(Set(try blobs.listing().map(\.digest)) == [owned, recent])
        #expect(try !blobs.contains(unowned))
        // The erased blob is gone although the run names it; what the run owns stays.
        #expect(throws: CoreError.self) { try blobs.get(erased) }
        #expect(try blobs.get(owned) == Data("owned by a run".utf8))

        let young = try json(database + ["gc", "--min-age", "0"])
        #expect(young["deleted_blobs"] == .int(1) && young["kept_blobs"] == .int(1))

        // prune-history deletes the finished run, and its gc then collects what the run owned.
        let worked = try adapt(database + ["worker", "--kinds", "noop", "--exit-when-idle"])
        #expect(worked.status == 0, "\(worked.stderr)")
        let pruned = try adapt(database + ["prune-history", "--older-than", "0", "--json"])
        #expect(pruned.status == 0, "\(pruned.stderr)")
        #expect(pruned.stderr.contains("gc: deleted 1 blob(s)"), "\(pruned.stderr)")
        #expect(try blobs.listing().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: directory.file("state").path), "the state directory was used")
    }

    @Test func gcOnADatabaseWithoutBlobsDeletesNothingAndADryRunCreatesNoTable() throws {
        let url = try PostgresCluster.shared().makeDatabase()
        let report = try json(["--database", url, "gc", "--dry-run"])
        #expect(report["deleted_blobs"] == .int(0) && report["kept_blobs"] == .int(0))
        let connection = try PostgresConnection(url)
        #expect(try connection.scalar("SELECT to_regclass('blobs') IS NULL").integerValue == 1)
    }
}
