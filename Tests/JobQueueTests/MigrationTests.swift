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
}
