import Storage

/// The replay buffer's tables, migrated as the `replay` component (Storage's `Schema`), one list per backend.
///
/// Each migration is assembled from the table files (`LineageTable`, `ExampleTable`, `UseTable`,
/// `ImportTable`, `BlobContentsTable`), so a table's SQL stays in one place. Never edit a shipped migration;
/// append one (to both lists when both backends need it).
public enum ReplaySchema {
    public static let schema = Schema(component: "replay", migrations: [
        LineageTable.create + ExampleTable.create + UseTable.create + ImportTable.create,
        BlobContentsTable.create,
        ExampleTable.addTurns,
        ExampleTable.addQuarantine,
    ])

    /// The same tables, columns and constraints on PostgreSQL, created whole by one migration (the SQLite list
    /// grew one step at a time before this backend existed).
    public static let postgresSchema = Schema(component: "replay", migrations: [
        LineageTable.createOnPostgres + ExampleTable.createOnPostgres + UseTable.createOnPostgres
            + ImportTable.createOnPostgres + BlobContentsTable.createOnPostgres,
    ])

    /// Brings the replay buffer's tables on `connection` up to date with its backend's list.
    static func migrate(_ connection: any SQLConnection) throws {
        if let database = connection as? Database {
            try database.migrate(schema)
        } else if let postgres = connection as? PostgresConnection {
            try postgres.migrate(postgresSchema)
        } else {
            preconditionFailure("the replay buffer runs on SQLite and PostgreSQL only")
        }
    }

    /// Whether `connection` has the blob records (migration 2 on SQLite), read without migrating.
    static func hasBlobRecords(_ connection: any SQLConnection) throws -> Bool {
        switch connection.dialect {
        case .sqlite:
            return try connection.scalar("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'replay_blobs'")
                .integerValue == 1
        case .postgres:
            return try connection.scalar("SELECT to_regclass('replay_blobs') IS NOT NULL").integerValue == 1
        }
    }
}

extension SQLConnection {
    /// A transaction over the replay buffer (a savepoint inside the caller's).
    ///
    /// SQLite's `BEGIN IMMEDIATE` runs writers one at a time. PostgreSQL's READ COMMITTED does not, so there the
    /// transaction first takes the buffer's advisory lock, held until the outermost transaction ends: what a
    /// change checks before it writes (the held-out count before a top-up, an example still stored before a
    /// blob is recorded as holding it) still holds when it commits, and a dump reads one state of the buffer.
    func replayTransaction<T>(_ body: () throws -> T) throws -> T {
        try transaction {
            if dialect == .postgres { try run("SELECT pg_advisory_xact_lock(?)", ReplaySchema.writeLock) }
            return try body()
        }
    }
}

extension ReplaySchema {
    /// The key of the replay buffer's advisory lock on PostgreSQL ("replay" in ASCII), apart from the
    /// migration lock ("adapt").
    static let writeLock: Int64 = 0x72_65_70_6C_61_79
}
