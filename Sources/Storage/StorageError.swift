/// What can go wrong with the state database. Descriptions name the SQL, never the bound values,
/// which may hold a user's text.
public enum StorageError: Error, Equatable, CustomStringConvertible {
    case sqlite(code: Int32, message: String, sql: String?)
    case notADatabase(path: String)
    case readOnly(path: String, message: String)
    case damaged(path: String, message: String)
    case foreignDatabase(path: String, tables: [String])
    case cannotOpen(path: String, message: String)
    case newerSchema(path: String, component: String, found: Int, known: Int)
    case olderSchema(path: String, component: String, found: Int, known: Int)
    case noDatabase(path: String)
    case unreadableWAL(path: String)
    case migrationBrokeForeignKeys(path: String, component: String, table: String)
    case unknownDurability(String)
    case missingColumn(String)
    /// A write found no room: the disk (or the process's file-size limit, or a quota) is full. The
    /// transaction was rolled back, so nothing it would have changed was changed.
    case noSpace(path: String, message: String)
    /// The PostgreSQL server refused a statement: its SQLSTATE (e.g. 23514, a CHECK failed) and message. The
    /// server's messages name tables, constraints and triggers, never bound values.
    case postgres(sqlstate: String, message: String, sql: String?)
    /// No connection could be made; `target` is the connection string without its password.
    case postgresConnection(target: String, message: String)
    /// An open connection broke (the server stopped, the network went away): nothing of the statement committed.
    case postgresConnectionLost(target: String, message: String)

    /// The PostgreSQL server could not be reached or the connection to it broke: worth trying again later.
    public var isPostgresOutage: Bool {
        switch self {
        case .postgresConnection, .postgresConnectionLost: return true
        default: return false
        }
    }

    /// SQLite's primary result code (the low byte of an extended code).
    public var primaryCode: Int32? {
        if case let .sqlite(code, _, _) = self { return code & 0xFF }
        return nil
    }

    /// A uniqueness or other constraint failed (SQLITE_CONSTRAINT).
    public var isConstraintViolation: Bool {
        if case let .postgres(sqlstate, _, _) = self { return sqlstate.hasPrefix("23") }
        return primaryCode == 19
    }

    /// The SQLSTATE of a statement the PostgreSQL server refused.
    public var sqlstate: String? {
        if case let .postgres(sqlstate, _, _) = self { return sqlstate }
        return nil
    }

    public var description: String {
        switch self {
        case let .sqlite(code, message, sql):
            let statement = sql.map { " in `\($0.split(whereSeparator: \.isNewline).joined(separator: " ").prefix(160))`" } ?? ""
            return "SQLite error \(code) (\(message))\(statement)"
        case let .notADatabase(path):
            return "\(path) is not an SQLite database; move it away or pass --state with another directory"
        case let .readOnly(path, message):
            return "cannot write the database \(path) (\(message)); the file or its directory is read-only: "
                + "check their permissions, or pass --state with a writable directory"
        case let .damaged(path, message):
            return "the database \(path) is damaged (\(message)); restore it from a backup, or see what can be saved "
                + "with `sqlite3 \(path) .recover`"
        case let .foreignDatabase(path, tables):
            return "\(path) is another program's SQLite database (its tables: \(tables.prefix(5).joined(separator: ", "))"
                + "\(tables.count > 5 ? ", …" : "")); adapt leaves it alone. Pass --state with a directory of adapt's own"
        case let .cannotOpen(path, message):
            return "cannot open the database \(path): \(message); check that the directory exists and is writable"
        case let .newerSchema(path, component, found, known) where component == "database":
            return "\(path) was written by a newer adapt (its schema version is \(found), the tables this build knows "
                + "account for \(known)); upgrade adapt or pass --state with another directory"
        case let .newerSchema(path, component, found, known):
            return "\(path) was written by a newer adapt (\(component) schema version \(found), this build knows \(known)); "
                + "upgrade adapt or pass --state with another directory"
        case let .olderSchema(path, component, found, known):
            return "\(path) was written by an older adapt (\(component) schema version \(found), this build uses \(known)), "
                + "and a command that only reads does not upgrade it: run a command that writes to this state first "
                + "(for example `adapt rescue`, `adapt data policy` or `adapt work --exit-when-idle`), then read it again"
        case let .noDatabase(path):
            return "there is no database at \(path); nothing was created. Check the path, or create a state by writing "
                + "to it (`adapt data import` or `adapt enqueue`)"
        case let .unreadableWAL(path):
            return "\(path) has a write-ahead log that cannot be read from this read-only location (its -shm file is "
                + "missing); open it once where it can be written, or copy the state to a writable directory"
        case let .migrationBrokeForeignKeys(path, component, table):
            return "upgrading the \(component) tables of \(path) would leave rows of \(table) pointing at rows that do not "
                + "exist; nothing was changed. Check the database with `sqlite3 \(path) 'PRAGMA foreign_key_check'`"
        case let .unknownDurability(value):
            return "unknown durability '\(value)'; use full or normal"
        case let .missingColumn(name):
            return "the query has no column named \(name)"
        case let .postgres(sqlstate, message, sql):
            let statement = sql.map { " in `\($0.split(whereSeparator: \.isNewline).joined(separator: " ").prefix(160))`" } ?? ""
            return "PostgreSQL error \(sqlstate) (\(message))\(statement)"
        case let .postgresConnection(target, message):
            return "cannot connect to the PostgreSQL database \(target): \(message); check that the server runs and "
                + "accepts this user, or pass another --database"
        case let .postgresConnectionLost(target, message):
            return "the connection to the PostgreSQL database \(target) broke (\(message)); nothing of the interrupted "
                + "change was committed: run the command again once the server is reachable"
        case let .noSpace(path, message):
            return "no space left to write the database \(path) (\(message)); the change was rolled back. "
                + "Free some space on its file system (or raise the file-size limit or quota), then run the command again"
        }
    }
}

/// How much a commit survives (DESIGN.md, "Durability is a setting").
public enum Durability: String, Sendable, CaseIterable {
    /// `synchronous=FULL`: no committed transaction is lost, even to a power cut.
    case full
    /// `synchronous=NORMAL`: survives any process kill; the last commits may be lost to a power cut.
    case normal

    public init(parsing text: String) throws {
        guard let value = Durability(rawValue: text.lowercased()) else { throw StorageError.unknownDurability(text) }
        self = value
    }
}
