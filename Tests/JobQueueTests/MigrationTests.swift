import AdaptCore
import JobQueue
import Storage
import Testing
import TestSupport

@Suite struct MigrationTests {
    @Test func openingTwiceMigratesOnceAndKeepsTheData() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("adapt.sqlite").path
        let first = try JobQueue(database: try Database(path: path))
        try first.enqueue(RunDescription(kind: "t", steps: [.init(name: "a", kind: "t")]))
        let database = try Database(path: path)
        let second = try JobQueue(database: database)
        #expect(try database.schemaVersion(of: "jobqueue") == JobSchema.schema.migrations.count)
        #expect(try database.scalar("PRAGMA user_version") == .integer(Int64(JobSchema.schema.migrations.count)))
        #expect(try second.runs().count == 1)
    }

    @Test func aDatabaseFromANewerBuildIsRefusedUnchanged() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("adapt.sqlite").path
        do {
            let database = try Database(path: path)
            try database.execute("CREATE TABLE keep (x INTEGER); INSERT INTO keep VALUES (1); PRAGMA user_version = 99")
        }
        #expect(throws: StorageError.self) { try JobQueue(database: try Database(path: path)) }
        let database = try Database(path: path)
        #expect(try database.scalar("PRAGMA user_version") == .integer(99))
        #expect(try database.scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'jobs'") == .integer(0))
    }

    /// Every row of `table`, every column, as text.
    static func dump(_ database: Database, _ table: String) throws -> [String] {
        let columns = try database.query("SELECT name FROM pragma_table_info(?) ORDER BY cid", table).compactMap { $0.string("name") }
        return try database.query("SELECT * FROM \(table) ORDER BY 1, 2").map { row in
            columns.map { "\($0)=\(row[$0])" }.joined(separator: " ")
        }
    }

    @Test func aVersionOneDatabaseIsRebuiltKeepingEveryRowAndItsRules() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("adapt.sqlite").path
        let tables = ["job_runs", "jobs", "job_dependencies", "job_events"]
        var before: [String: [String]] = [:]
        do {
            let database = try Database(path: path)
            try database.migrate(Schema(component: "jobqueue", migrations: [JobSchema.schema.migrations[0]]))
            try database.execute("""
                INSERT INTO job_runs (id, kind, name, unique_key, manifest, created_at) VALUES
                    (1, 'nightly', 'n1', 'lineage/2026-11-30', '{}', 1), (2, 'noop', 'n2', NULL, '{}', 2);
                INSERT INTO jobs (id, run_id, name, kind, state, run_at, max_attempts, input, waiting_on, created_at,
                                  updated_at, transition_note) VALUES
                    (1, 1, 'a', 't', 'ready', 1, 3, '{}', 0, 1, 1, 'enqueued'),
                    (2, 1, 'b', 't', 'pending', 1, 3, '{}', 1, 1, 1, 'enqueued'),
                    (3, 2, 'a', 'noop', 'ready', 2, 3, '{}', 0, 2, 2, 'enqueued');
                INSERT INTO job_dependencies (job_id, depends_on) VALUES (2, 1);
                UPDATE jobs SET state = 'running', attempt = 1, lease_owner = 'w', lease_expires_at = 99,
                                transition_note = 'claimed' WHERE id = 3;
                """)
            for table in tables { before[table] = try Self.dump(database, table) }
        }
        let database = try Database(path: path)
        let queue = try JobQueue(database: database)
        #expect(try database.schemaVersion(of: "jobqueue") == 2)
        for table in tables {
            #expect(try Self.dump(database, table) == before[table], "\(table)")
        }
        #expect(try database.scalar("PRAGMA foreign_keys") == .integer(1), "foreign keys are back on")
        #expect(throws: StorageError.self, "the idempotency key is still unique") {
            try database.run("INSERT INTO job_runs (kind, name, unique_key, manifest, created_at) VALUES ('t', 'x', 'lineage/2026-11-30', '{}', 3)")
        }
        #expect(throws: StorageError.self, "transitions are still checked") {
            try database.run("UPDATE jobs SET state = 'succeeded', output = '1', finished_at = 5 WHERE id = 2")
        }
        #expect(try queue.enqueue(RunDescription(kind: "t", uniqueKey: "lineage/2026-11-30", steps: [.init(name: "a", kind: "t")])).existing)
        // Deleting a run still takes its jobs, their dependencies and their events with it.
        try database.run("DELETE FROM job_runs WHERE id = 1")
        #expect(try database.scalar("SELECT count(*) FROM jobs") == .integer(1))
        #expect(try database.scalar("SELECT count(*) FROM job_dependencies") == .integer(0))
        #expect(try database.scalar("SELECT count(*) FROM job_events WHERE job_id <> 3") == .integer(0))
    }
}
