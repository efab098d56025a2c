import AdaptCore
import Foundation
import JobQueue
import Registry
import ReplayBuffer
import Storage

/// The tables `adapt migrate` copies, and how it copies them between the two backends.
///
/// The list is explicit, in an order that satisfies the foreign keys (a parent table before the tables that
/// refer to it). A table on either side that is not in it (a component added after this list) stops the copy,
/// so nothing is left behind silently.
enum MigrationTables {
    struct Table {
        let component: String
        let name: String
        /// Rows inserted in this order where a table refers to itself (a version's parent comes first).
        var order: String?
        /// Columns only the PostgreSQL table has, about its own transactions: not copied, the target fills them.
        var postgresOnly: Set<String> = []
    }

    static let all: [Table] = [
        Table(component: "jobqueue", name: "job_runs"),
        Table(component: "jobqueue", name: "jobs"),
        Table(component: "jobqueue", name: "job_dependencies"),
        // The transaction that wrote an event (`PostgresJobSchema.eventTransactions`) means nothing elsewhere.
        Table(component: "jobqueue", name: "job_events", postgresOnly: ["xact"]),
        Table(component: "replay", name: "replay_lineages"),
        Table(component: "replay", name: "replay_imports"),
        Table(component: "replay", name: "replay_examples"),
        Table(component: "replay", name: "replay_uses"),
        Table(component: "replay", name: "replay_blobs"),
        Table(component: "replay", name: "replay_blob_examples"),
        Table(component: "registry", name: "registry_versions", order: "id"),
        Table(component: "registry", name: "registry_active"),
        Table(component: "registry", name: "registry_history"),
        Table(component: "registry", name: "registry_gate_reports"),
        Table(component: "registry", name: "score_cache"),
        // Its schema is a component of its own (`RegistryPruneSchema`), its rows reported with the registry's.
        Table(component: "registry", name: "registry_pruned"),
    ]

    static let sqliteSchemas = [JobSchema.schema, ReplaySchema.schema, RegistrySchema.schema, RegistryPruneSchema.schema]
    static let postgresSchemas = [PostgresJobSchema.schema, ReplaySchema.postgresSchema, RegistrySchema.postgres,
                                  RegistryPruneSchema.postgres, PostgresBlobStore.schema]
    /// Tables that are not copied as rows: the schema record (each side writes its own), and on PostgreSQL the
    /// blob store, copied blob by blob (`BlobCopy`) so every digest is checked, and the sessions following the
    /// event stream (`PostgresJobSchema.eventNotifications`), which mean nothing on another server, and which
    /// supervisor announced a run's end (`PostgresJobSchema.runAnnouncements`), which no one announces again, and
    /// the workers waiting for work now (`PostgresJobSchema.handOffs`).
    static let bookkeeping: Set<String> = ["adapt_schema", "blobs", "blob_chunks", "job_event_followers", "job_run_announcements",
                                           "job_waiters"]

    // MARK: Checks before anything is written

    /// Each component of the source is absent or at this build's version, so both sides have the same columns.
    static func requireCurrent(_ connection: any SQLConnection, schemas: [Schema], name: String) throws {
        for schema in schemas {
            let found = try schemaVersion(connection, schema.component)
            if found != 0 && found != schema.migrations.count {
                throw MigrationError.sourceSchemaNotCurrent(source: name, component: schema.component, found: found,
                                                            known: schema.migrations.count)
            }
        }
    }

    /// Every table of `connection` is one this list copies (or bookkeeping).
    static func requireKnown(_ connection: any SQLConnection, side: String) throws {
        let known = Set(all.map(\.name)).union(bookkeeping)
        let unknown = try tableNames(connection).filter { !known.contains($0) }
        if !unknown.isEmpty { throw MigrationError.unknownTables(side: side, tables: unknown) }
    }

    /// The target's adapt tables (just migrated) hold no row.
    static func requireEmpty(_ connection: any SQLConnection, name: String) throws {
        var holds: [String] = []
        let tables = all.map(\.name) + (connection.dialect == .postgres ? ["blobs"] : [])
        for table in tables {
            let rows = try connection.scalar("SELECT count(*) FROM \(quoted(table))").integerValue ?? 0
            if rows > 0 { holds.append("\(table): \(rows) rows") }
        }
        if !holds.isEmpty { throw MigrationError.targetNotEmpty(target: name, holds: holds) }
    }

    // MARK: The copy

    /// Copies every table from `source` to `target` and compares their digests. Call inside a transaction on
    /// `target`: the rules are off between `suspendRules` and `restoreRules`, and a mismatch throws, so the
    /// caller's transaction rolls the copy back.
    static func copy(from source: any SQLConnection, to target: any SQLConnection) throws -> [StateMigration.ComponentReport] {
        let rules = try suspendRules(target)
        var read: [(Table, [String], TableDigest)] = []
        for table in all {
            let columns = try columnNames(target, table)
            guard try exists(source, table.name) else {
                read.append((table, columns, TableDigest(rows: [], columns: columns)))
                continue
            }
            let sourceColumns = try columnNames(source, table)
            if sourceColumns != columns {
                throw MigrationError.unknownTables(side: "the source's \(table.name) (columns \(sourceColumns.joined(separator: ", ")))",
                                                   tables: [table.name])
            }
            let rows = try source.query(select(table, columns), arguments: [])
            try insert(rows, into: table.name, columns: columns, on: target)
            read.append((table, columns, TableDigest(rows: rows, columns: columns)))
        }
        try restoreRules(target, rules)
        if target.dialect == .postgres { try advanceIdentities(target) }

        var tables: [String: [StateMigration.TableReport]] = [:]
        for (table, columns, sourceDigest) in read {
            let copied = TableDigest(rows: try target.query(select(table, columns), arguments: []), columns: columns)
            let report = StateMigration.TableReport(table: table.name, source: sourceDigest, target: copied)
            if !report.matched {
                throw MigrationError.digestMismatch(component: table.component, table: table.name,
                                                    sourceRows: report.sourceRows, targetRows: report.targetRows)
            }
            tables[table.component, default: []].append(report)
        }
        var components: [String] = []
        for table in all where !components.contains(table.component) { components.append(table.component) }
        return components.map { StateMigration.ComponentReport(component: $0, tables: tables[$0] ?? []) }
    }

    /// The database's rules, off for the rest of the caller's transaction. On PostgreSQL the user triggers of
    /// the copied tables are disabled (`ALTER TABLE` is transactional: a rollback, or `restoreRules`, turns them
    /// back on; foreign keys stay checked). SQLite has no way to disable a trigger, so they are dropped and
    /// created again from their own SQL before the commit; a rollback restores them with everything else.
    private static func suspendRules(_ target: any SQLConnection) throws -> [String] {
        switch target.dialect {
        case .postgres:
            for table in all { try target.execute("ALTER TABLE \(quoted(table.name)) DISABLE TRIGGER USER") }
            return []
        case .sqlite:
            let triggers = try target.query("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' ORDER BY name", arguments: [])
            for trigger in triggers { try target.execute("DROP TRIGGER \(quoted(trigger.string("name") ?? ""))") }
            return triggers.compactMap { $0.string("sql") }
        }
    }

    private static func restoreRules(_ target: any SQLConnection, _ triggers: [String]) throws {
        switch target.dialect {
        case .postgres:
            for table in all { try target.execute("ALTER TABLE \(quoted(table.name)) ENABLE TRIGGER USER") }
        case .sqlite:
            for sql in triggers { try target.execute(sql) }
        }
    }

    /// Identity columns continue after the copied ids, as SQLite's row ids do by themselves.
    private static func advanceIdentities(_ target: any SQLConnection) throws {
        for table in all {
            let identities = try target.query("""
                SELECT column_name FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = ? AND is_identity = 'YES'
                """, arguments: [table.name]).compactMap { $0.string("column_name") }
            for column in identities {
                _ = try target.query("""
                    SELECT setval(pg_get_serial_sequence(?, ?), m) FROM (SELECT max(\(quoted(column))) AS m FROM \(quoted(table.name))) s
                    WHERE m IS NOT NULL
                    """, arguments: [quoted(table.name), column])
            }
        }
    }

    // MARK: Catalog reads, per dialect

    private static func select(_ table: Table, _ columns: [String]) -> String {
        "SELECT \(columns.map(quoted).joined(separator: ", ")) FROM \(quoted(table.name))"
            + (table.order.map { " ORDER BY \(quoted($0))" } ?? "")
    }

    /// Inserts `rows` several to a statement: one round trip to the server per batch instead of per row. Rows of
    /// a batch are checked against foreign keys at the end of their statement, so a registry version may name a
    /// parent inserted in the same batch.
    private static func insert(_ rows: [Row], into table: String, columns: [String], on target: any SQLConnection) throws {
        // Well under SQLite's 32,766 and PostgreSQL's 65,535 parameters per statement.
        let perStatement = max(1, min(200, 4_000 / max(1, columns.count)))
        // Ids are copied as they are, including into columns PostgreSQL generates ALWAYS (events).
        let overriding = target.dialect == .postgres ? " OVERRIDING SYSTEM VALUE" : ""
        let head = "INSERT INTO \(quoted(table)) (\(columns.map(quoted).joined(separator: ", ")))\(overriding) VALUES "
        let tuple = "(" + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ")"
        var start = 0
        while start < rows.count {
            let batch = rows[start..<min(start + perStatement, rows.count)]
            try target.run(head + Array(repeating: tuple, count: batch.count).joined(separator: ", "),
                           arguments: batch.flatMap { row in columns.map { row[$0] } })
            start += batch.count
        }
    }

    private static func tableNames(_ connection: any SQLConnection) throws -> [String] {
        switch connection.dialect {
        case .sqlite:
            return try connection.query(
                "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
                arguments: []).compactMap { $0.string("name") }
        case .postgres:
            return try connection.query("""
                SELECT table_name FROM information_schema.tables
                WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name
                """, arguments: []).compactMap { $0.string("table_name") }
        }
    }

    private static func exists(_ connection: any SQLConnection, _ table: String) throws -> Bool {
        try tableNames(connection).contains(table)
    }

    /// Column names sorted, so the two sides' lists compare and rows encode in one order; the PostgreSQL-only
    /// columns left out.
    private static func columnNames(_ connection: any SQLConnection, _ table: Table) throws -> [String] {
        try columnNames(connection, table.name).filter { !table.postgresOnly.contains($0) }
    }

    private static func columnNames(_ connection: any SQLConnection, _ table: String) throws -> [String] {
        switch connection.dialect {
        case .sqlite:
            return try connection.query("SELECT name FROM pragma_table_info(?) ORDER BY name", arguments: [table])
                .compactMap { $0.string("name") }
        case .postgres:
            return try connection.query("""
                SELECT column_name FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = ? ORDER BY column_name COLLATE "C"
                """, arguments: [table]).compactMap { $0.string("column_name") }
        }
    }

    private static func schemaVersion(_ connection: any SQLConnection, _ component: String) throws -> Int {
        if let database = connection as? Database { return try database.schemaVersion(of: component) }
        if let server = connection as? PostgresConnection { return try server.schemaVersion(of: component) }
        return 0
    }

    private static func quoted(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
}
