/// Versioned migrations on PostgreSQL, recorded as on SQLite (`Migrator.swift`): one row per component in
/// `adapt_schema`, migration `i` moving a component from version `i` to `i + 1`, a component from a newer build
/// refused before anything is changed. A schema's PostgreSQL migrations are its own list (the dialects differ),
/// so a component's version counts that backend's migrations.
///
/// PostgreSQL runs DDL inside transactions, so a migration commits whole or not at all; a transaction-level
/// advisory lock makes processes that start together migrate one after the other instead of racing to create
/// the same tables.
extension PostgresConnection {
    public func migrate(_ schema: Schema) throws {
        try transaction {
            try run("SELECT pg_advisory_xact_lock(\(Self.migrationLock))")
            try refuseForeignTables()
            try execute("CREATE TABLE IF NOT EXISTS adapt_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
            let current = try schemaVersion(of: schema.component)
            if current > schema.migrations.count {
                throw StorageError.newerSchema(path: displayTarget, component: schema.component, found: current,
                                               known: schema.migrations.count)
            }
            guard current < schema.migrations.count else { return }
            for script in schema.migrations[current...] { try execute(script) }
            try run("""
                INSERT INTO adapt_schema (component, version) VALUES ($1, $2)
                ON CONFLICT (component) DO UPDATE SET version = excluded.version
                """, schema.component, schema.migrations.count)
        }
    }

    /// The version of `component` recorded in this database (0 when never migrated).
    public func schemaVersion(of component: String) throws -> Int {
        guard try scalar("SELECT to_regclass('adapt_schema') IS NOT NULL").integerValue == 1 else { return 0 }
        return Int(try scalar("SELECT version FROM adapt_schema WHERE component = $1", component).integerValue ?? 0)
    }

    /// Tables in the connection's schema without adapt's record belong to another program.
    private func refuseForeignTables() throws {
        guard try scalar("SELECT to_regclass('adapt_schema') IS NULL").integerValue == 1 else { return }
        let tables = try query("""
            SELECT table_name FROM information_schema.tables
            WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name
            """).compactMap { $0.string("table_name") }
        if !tables.isEmpty { throw StorageError.foreignDatabase(path: displayTarget, tables: tables) }
    }

    /// The key of the advisory lock migrations hold ("adapt" in ASCII).
    static let migrationLock: Int64 = 0x61_64_61_70_74
}
