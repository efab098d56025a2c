import AdaptCore
import Foundation
import JobQueue
import Registry
import Services
import Storage
import Testing
import TestSupport

@Suite struct StateMigrationTests {
    @Test func aStateCopiedToPostgresAndBackHasTheSameTableDigests() throws {
        let fixture = try MigrationFixture()
        let database = try PostgresCluster.shared().makeDatabase()
        let backDirectory = TemporaryDirectory("migrate-back")
        let back = backDirectory.state.root

        let there = try StateMigration.run(from: .directory(fixture.state.root), to: .postgres(database))
        // What a migrate killed halfway would have left beside the target.
        let stale = backDirectory.file(".state.migrating-killed")
        try FileManager.default.createDirectory(at: stale, withIntermediateDirectories: false)
        let again = try StateMigration.run(from: .postgres(database), to: .directory(back))
        // The lock file a migrate holds while it builds stays (removing it would let two migrates hold two locks).
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: backDirectory.path)) == ["state", ".state.migrate-lock"])

        #expect(there.matched && again.matched)
        let rows = Dictionary(uniqueKeysWithValues: there.components.flatMap(\.tables).map { ($0.table, $0.sourceRows) })
        // Two jobs, each created (prune ready, train pending) and moved three times: seven events.
        #expect(rows["jobs"] == 2 && rows["job_dependencies"] == 1 && rows["job_events"] == 7 && rows["job_runs"] == 1)
        #expect(rows["registry_versions"] == 3 && rows["registry_history"] == 3 && rows["registry_active"] == 1)
        #expect(rows["replay_examples"] == 254 && rows["replay_imports"] == 2)
        #expect(there.blobs.count == 4)
        // The first state's digests, read from SQLite, are the second state's, written to SQLite from PostgreSQL.
        for (first, second) in zip(there.components, again.components) {
            #expect(first.component == second.component)
            #expect(first.sourceDigest == second.targetDigest, "\(first.component)")
        }
        #expect(there.blobs.sourceDigest == again.blobs.targetDigest)
    }

    @Test func theCopiedStatesWorkOnEitherBackend() throws {
        let fixture = try MigrationFixture()
        let database = try PostgresCluster.shared().makeDatabase()
        let backDirectory = TemporaryDirectory("migrate-back")
        let back = backDirectory.state.root
        _ = try StateMigration.run(from: .directory(fixture.state.root), to: .postgres(database))
        _ = try StateMigration.run(from: .postgres(database), to: .directory(back))

        // On PostgreSQL: the rules are back on and the generated ids continue after the copied ones.
        let queue = try PostgresJobQueue(connectionString: database)
        #expect(try queue.runs().map(\.state) == ["succeeded"])
        let next = try queue.enqueue(RunDescription(kind: "nightly", steps: [.init(name: "prune", kind: "prune")]))
        #expect(next.runID.value == 2)
        #expect(try queue.events(run: next.runID).count == 1)
        let server = try PostgresConnection(database)
        let registry = try AdapterRegistry(connection: server, blobs: try PostgresBlobStore(connection: server))
        #expect(try registry.active(lineage: MigrationFixture.lineage)?.number == 1)
        let fourth = try registry.register(adapterData: Data("adapter 4".utf8), lineage: MigrationFixture.lineage,
                                           metadata: AdapterMetadata(trainingExamples: 1), metrics: MigrationFixture.better)
        #expect(fourth.number == 4)
        try MigrationFixture.promoteScored(fourth, in: registry)
        #expect(throws: StorageError.self) { try server.run("UPDATE job_events SET message = 'rewritten'") }

        // Back in a state directory: the same, and the adapters' files are there and intact.
        let state = StateDirectory(root: back)
        let local = try AdapterRegistry(database: try Database(path: state.database.path), blobs: state.blobs)
        let active = try #require(try local.active(lineage: MigrationFixture.lineage))
        #expect(active.number == 1)
        #expect(try local.adapterData(active) == Data("adapter 0".utf8) + Data(repeating: 0, count: 300))
        let localDatabase = try Database(path: state.database.path)
        let localQueue = try JobQueue(database: localDatabase)
        #expect(try localQueue.jobs().allSatisfy { $0.state == .succeeded })
        #expect(throws: StorageError.self) { try localDatabase.run("UPDATE job_events SET message = 'rewritten'") }
    }

    @Test func idleWorkersOnPostgresAreWokenForCopiedReadyJobs() throws {
        let fixture = try MigrationFixture(waitingRun: true)
        let database = try PostgresCluster.shared().makeDatabase()
        let listener = try PostgresConnection(database)
        try listener.listen(PostgresJobSchema.channel)

        _ = try StateMigration.run(from: .directory(fixture.state.root), to: .postgres(database))

        let woken = try listener.waitForNotifications(timeoutMilliseconds: 5_000)
        #expect(woken.map(\.payload) == ["sample"])
        let queue = try PostgresJobQueue(connectionString: database)
        let claim = try #require(try queue.claim(kinds: ["sample"], owner: "host-b", leaseMilliseconds: 60_000))
        try queue.complete(claim, output: .object([:]))
    }

    @Test func aTargetHoldingAdaptDataIsRefusedAndLeftAsItWas() throws {
        let fixture = try MigrationFixture()
        let database = try PostgresCluster.shared().makeDatabase()
        _ = try StateMigration.run(from: .directory(fixture.state.root), to: .postgres(database))
        let server = try PostgresConnection(database)
        let before = try server.scalar("SELECT count(*) FROM job_events")

        #expect(throws: MigrationError.self) {
            try StateMigration.run(from: .directory(fixture.state.root), to: .postgres(database))
        }
        #expect(try server.scalar("SELECT count(*) FROM job_events") == before)

        // A directory that is not empty is refused before anything is read or written.
        #expect(throws: MigrationError.self) {
            try StateMigration.run(from: .postgres(database), to: .directory(fixture.state.root))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.directory.path) == ["state"])
    }

    @Test func aDamagedBlobStopsTheCopyAndTheDatabaseKeepsNothing() throws {
        let fixture = try MigrationFixture()
        let damaged = try #require(fixture.state.blobs.all().first)
        try Data("garbage".utf8).write(to: fixture.state.blobs.url(for: damaged))
        let database = try PostgresCluster.shared().makeDatabase()

        #expect(throws: CoreError.self) {
            try StateMigration.run(from: .directory(fixture.state.root), to: .postgres(database))
        }
        let server = try PostgresConnection(database)
        #expect(try server.scalar("SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()") == .integer(0))
    }

    @Test func anUnreachableServerIsAClearError() throws {
        let fixture = try MigrationFixture()
        let result = try Executables.run("adapt", ["migrate", "--from", fixture.state.root.path,
                                                   "--to", "postgres://adapt:secret@127.0.0.1:1/adapt"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("127.0.0.1"))
        #expect(!result.stderr.contains("secret"))
        #expect(result.stdout.isEmpty)
    }

    @Test func twoDirectoriesOrAMissingSideAreRefused() throws {
        let fixture = try MigrationFixture()
        let otherDirectory = TemporaryDirectory("migrate-other")
        let other = otherDirectory.path
        let both = try Executables.run("adapt", ["migrate", "--from", fixture.state.root.path, "--to", other])
        #expect(both.status == 1)
        #expect(both.stderr.contains("one side must be a state directory and the other a postgres:// URL"))
        let missing = try Executables.run("adapt", ["migrate", "--from", fixture.state.root.path])
        #expect(missing.status == 2)
        let noState = try Executables.run("adapt", ["migrate", "--from", other, "--to", "postgres://127.0.0.1:1/x"])
        #expect(noState.status == 1)
        #expect(noState.stderr.contains("holds no adapt state"))
    }

    @Test func aDatabaseWithoutAdaptDataIsNoStateToCopy() throws {
        let database = try PostgresCluster.shared().makeDatabase()
        let targetDirectory = TemporaryDirectory("migrate-empty")
        let target = targetDirectory.state.root
        #expect(throws: MigrationError.noSourceState(path: database)) {
            try StateMigration.run(from: .postgres(database), to: .directory(target))
        }
        #expect(!FileManager.default.fileExists(atPath: target.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: target.deletingLastPathComponent().path).isEmpty)
    }

    @Test func jsonPrintsRowCountsAndDigestsPerComponent() throws {
        let fixture = try MigrationFixture()
        let database = try PostgresCluster.shared().makeDatabase()
        let result = try Executables.run("adapt", ["migrate", "--from", fixture.state.root.path, "--to", database, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(json["matched"] as? Bool == true)
        let components = try #require(json["components"] as? [[String: Any]])
        #expect(components.map { $0["component"] as? String } == ["jobqueue", "replay", "registry"])
        let jobs = try #require(components.first)
        #expect(jobs["rows"] as? Int == 11)
        #expect((jobs["source_digest"] as? String)?.count == 64 && jobs["source_digest"] as? String == jobs["target_digest"] as? String)
        let blobs = try #require(json["blobs"] as? [String: Any])
        #expect(blobs["count"] as? Int == 4 && blobs["matched"] as? Bool == true)
    }
}
