/// One ordered list of schema changes for one component (the job engine, the replay buffer, the registry).
///
/// Each component owns its tables and its migrations ("SQL lives with its table"). Applied versions are kept
/// per component in `adapt_schema`, and `PRAGMA user_version` holds their sum, so a database touched by a newer
/// build (more migrations than this build knows, in any component) is refused before anything is changed.
public struct Schema: Sendable {
    public let component: String
    /// SQL scripts; migration `i` moves the component from version `i` to `i + 1`. Never edit a shipped one.
    public let migrations: [String]

    public init(component: String, migrations: [String]) {
        self.component = component
        self.migrations = migrations
    }
}

extension Database {
    /// Brings `schema` up to date in one transaction, or refuses a database from a newer build.
    ///
    /// Foreign keys are off while migrations run, so that one may rebuild a table other tables refer to (SQLite
    /// cannot change a column's constraints in place; dropping the old table with foreign keys on would
    /// delete, by cascade, every row that refers to it). They are checked before the commit instead, and any
    /// violation rolls the migration back.
    ///
    /// A read-only database is never changed: a component at this build's version is used as it is, one it
    /// never had gets an empty stand-in (`attachEmptyStandIn`), and one at an older version is refused with
    /// `olderSchema`, which says to run a command that writes first.
    public func migrate(_ schema: Schema) throws {
        if isReadOnly { return try checkReadOnly(schema) }
        // `PRAGMA foreign_keys` is ignored inside a transaction: set it around the one that migrates.
        guard try schemaVersion(of: schema.component) != schema.migrations.count else {
            try migrateInTransaction(schema)  // still refuses a newer database
            return
        }
        try execute("PRAGMA foreign_keys = OFF")
        defer { try? execute("PRAGMA foreign_keys = ON") }
        try migrateInTransaction(schema)
    }

    private func migrateInTransaction(_ schema: Schema) throws {
        try transaction {
            try refuseForeignTables()
            try execute("CREATE TABLE IF NOT EXISTS adapt_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL) STRICT")
            let (current, total) = try versions(of: schema, recorded: try query("SELECT component, version FROM adapt_schema"))
            guard current < schema.migrations.count else { return }
            for script in schema.migrations[current...] { try execute(script) }
            if let violation = try queryOne("PRAGMA foreign_key_check") {
                throw StorageError.migrationBrokeForeignKeys(path: path, component: schema.component,
                                                             table: violation.string("table") ?? "?")
            }
            try run("INSERT INTO adapt_schema (component, version) VALUES (?, ?) "
                    + "ON CONFLICT (component) DO UPDATE SET version = excluded.version",
                    schema.component, schema.migrations.count)
            try execute("PRAGMA user_version = \(total - current + schema.migrations.count)")
        }
    }

    private func checkReadOnly(_ schema: Schema) throws {
        try refuseForeignTables()
        let hasRecord = try scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'adapt_schema'").integerValue == 1
        let current = try versions(of: schema, recorded: hasRecord ? try query("SELECT component, version FROM adapt_schema") : []).current
        if current == 0 { return try attachEmptyStandIn(for: schema) }
        if current < schema.migrations.count {
            throw StorageError.olderSchema(path: path, component: schema.component, found: current, known: schema.migrations.count)
        }
    }

    /// `schema`'s recorded version and the sum of every component's, after refusing a database written by a
    /// newer adapt (as a whole, through `user_version`, or for this component).
    private func versions(of schema: Schema, recorded: [Row]) throws -> (current: Int, total: Int) {
        let total = recorded.reduce(0) { $0 + ($1.int("version") ?? 0) }
        let userVersion = Int(try scalar("PRAGMA user_version").integerValue ?? 0)
        if userVersion > total {
            throw StorageError.newerSchema(path: path, component: "database", found: userVersion, known: total)
        }
        let current = recorded.first { $0.string("component") == schema.component }?.int("version") ?? 0
        if current > schema.migrations.count {
            throw StorageError.newerSchema(path: path, component: schema.component, found: current, known: schema.migrations.count)
        }
        return (current, total)
    }

    /// Tables without adapt's schema record belong to another program; migrating would add adapt's tables
    /// among them (or fail halfway on a name they share).
    public func refuseForeignTables() throws {
        guard try scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'adapt_schema'").integerValue == 0 else { return }
        let tables = try query("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
            .compactMap { $0.string("name") }
        if !tables.isEmpty { throw StorageError.foreignDatabase(path: path, tables: tables) }
    }

    /// The version of `component` recorded in this database (0 when never migrated).
    public func schemaVersion(of component: String) throws -> Int {
        let exists = try scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'adapt_schema'")
        guard exists.integerValue == 1 else { return 0 }
        return Int(try scalar("SELECT version FROM adapt_schema WHERE component = ?", component).integerValue ?? 0)
    }
}

extension SQLValue {
    public var integerValue: Int64? {
        switch self {
        case let .integer(v): return v
        case let .real(v): return Int64(v)
        default: return nil
        }
    }
}
