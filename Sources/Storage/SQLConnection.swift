/// Which SQL a connection speaks, for the few statements the two databases spell differently (types in
/// DDL, upserts that ignore, time functions); everything else is written once.
public enum SQLDialect: String, Sendable {
    case sqlite
    case postgres
}

/// A connection to either backend: `Database` (the state directory's SQLite file) or `PostgresConnection`.
/// Stores that must live on both (registry, replay buffer) are written against this, with `?` placeholders,
/// and rows come back as the same `Row`s and `SQLValue`s.
public protocol SQLConnection: AnyObject, Sendable {
    var dialect: SQLDialect { get }
    /// Runs one or more statements that take no parameters (a migration script).
    func execute(_ sql: String) throws
    /// Runs one statement and returns how many rows it changed.
    @discardableResult
    func run(_ sql: String, arguments: [SQLBindable]) throws -> Int
    /// Runs one statement and returns every row.
    func query(_ sql: String, arguments: [SQLBindable]) throws -> [Row]
    /// Runs `body` in a transaction; nested calls become savepoints; a thrown error rolls back.
    func transaction<T>(_ body: () throws -> T) throws -> T
}

extension SQLConnection {
    @discardableResult
    public func run(_ sql: String, _ arguments: SQLBindable...) throws -> Int {
        try run(sql, arguments: arguments)
    }

    public func query(_ sql: String, _ arguments: SQLBindable...) throws -> [Row] {
        try query(sql, arguments: arguments)
    }

    /// The first row, or nil.
    public func queryOne(_ sql: String, _ arguments: SQLBindable...) throws -> Row? {
        try query(sql, arguments: arguments).first
    }

    /// The first column of the first row.
    public func scalar(_ sql: String, _ arguments: SQLBindable...) throws -> SQLValue {
        try query(sql, arguments: arguments).first?.values.first ?? .null
    }
}

enum Placeholders {
    /// `sql` with each `?` parameter written as PostgreSQL's `$1`, `$2`, … in order. Question marks inside
    /// quoted literals, quoted identifiers and `--` comments are text, not parameters. (PostgreSQL's jsonb `?`
    /// operators cannot be used in such statements; none are.)
    static func numbered(_ sql: String) -> String {
        guard sql.utf8.contains(UInt8(ascii: "?")) else { return sql }
        var output = ""
        output.reserveCapacity(sql.utf8.count + 16)
        var index = 0
        var quote: Character?
        var inComment = false
        var previous: Character?
        for character in sql {
            defer { previous = character }
            if inComment {
                if character == "\n" { inComment = false }
            } else if let open = quote {
                if character == open { quote = nil }
            } else if character == "'" || character == "\"" {
                quote = character
            } else if character == "-", previous == "-" {
                inComment = true
            } else if character == "?" {
                index += 1
                output += "$\(index)"
                continue
            }
            output.append(character)
        }
        return output
    }
}
