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

    static func columns(_ database: Database, _ table: String) throws -> [String] {
        try database.query("SELECT name FROM pragma_table_info(?) ORDER BY cid", table).compactMap { $0.string("name") }
    }

    /// Every row of `table`, the given columns, as text.
    static func dump(_ database: Database, _ table: String, columns: [String]) throws -> [String] {
        try database.query("SELECT * FROM \(table) ORDER BY 1, 2").map { row in
            columns.map { "\($0)=\(row[$0])" }.joined(separator: " ")
        }
    }

    @Test func aVersionOneDatabaseIsRebuiltKeepingEveryRowAndItsRules() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("adapt.sqlite").path
        let tables = ["job_runs", "jobs", "job_dependencies", "job_events"]
        var before: [String: [String]] = [:]
        var columns: [String: [String]] = [:]
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
            for table in tables {
                columns[table] = try Self.columns(database, table)
                before[table] = try Self.dump(database, table, columns: columns[table]!)
            }
        }
        let database = try Database(path: path)
        let queue = try JobQueue(database: database)
        #expect(try database.schemaVersion(of: "jobqueue") == JobSchema.schema.migrations.count)
        for table in tables {
            #expect(try Self.dump(database, table, columns: columns[table]!) == before[table], "\(table)")
        }
        // Version 3: each run knows its jobs' id range, each job its last event, each event its job's previous one.
        #expect(try database.query("SELECT first_job_id, last_job_id FROM job_runs ORDER BY id").map {
            [$0.int64("first_job_id"), $0.int64("last_job_id")] } == [[1, 2], [3, 3]])
        #expect(try queue.events(job: JobID(3)).map(\.to) == [.ready, .running])
        #expect(try queue.events(run: RunID(1)).map(\.jobID) == [JobID(1), JobID(2)])
        #expect(try queue.jobs(matching: .init(run: RunID(1))).map(\.name) == ["a", "b"])
        #expect(try database.scalar("PRAGMA foreign_keys") == .integer(1), "foreign keys are back on")
        #expect(throws: StorageError.self, "the idempotency key is still unique") {
            try database.run("INSERT INTO job_runs (kind, name, unique_key, manifest, created_at, first_job_id, last_job_id) VALUES ('t', 'x', 'lineage/2026-11-30', '{}', 3, 9, 9)")
        }
        #expect(throws: StorageError.self, "transitions are still checked") {
            try database.run("UPDATE jobs SET state = 'succeeded', output = '1', finished_at = 5 WHERE id = 2")
        }
        #expect(try queue.enqueue(RunDescription(kind: "t", uniqueKey: "lineage/2026-11-30", steps: [.init(name: "a", kind: "t")])).existing)
        // New jobs and events continue after the converted ones, and pruning still takes a run's jobs,
        // dependencies and events with it.
        let added = try queue.enqueue(RunDescription(kind: "t", steps: [.init(name: "a", kind: "t")]))
        #expect(added.jobIDs == [JobID(4)])
        #expect(try queue.events(job: JobID(4)).map(\.to) == [.ready])
        try database.run("""
            UPDATE jobs SET state = 'cancelled', finished_at = 1, updated_at = 1, lease_owner = NULL,
                            lease_expires_at = NULL WHERE id <= 3
            """)
        let pruned = try queue.pruneHistory(olderThanMilliseconds: 0)
        #expect(pruned.runs == 2 && pruned.jobs == 3)
        #expect(try database.scalar("SELECT count(*) FROM jobs") == .integer(1))
        #expect(try database.scalar("SELECT count(*) FROM job_dependencies") == .integer(0))
        #expect(try database.scalar("SELECT count(*) FROM job_events WHERE job_id <> 4") == .integer(0))
    }
}
