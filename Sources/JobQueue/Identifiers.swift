import Storage

/// A run's key: an integer in SQLite, `run-<n>` everywhere a person or a program sees it.
public struct RunID: Hashable, Comparable, Sendable, CustomStringConvertible, SQLBindable {
    public let value: Int64
    public init(_ value: Int64) { self.value = value }
    public var description: String { "run-\(value)" }
    public var sqlValue: SQLValue { .integer(value) }
    public static func < (a: RunID, b: RunID) -> Bool { a.value < b.value }

    /// Accepts `run-7` or a bare `7` (for arguments whose kind is implied, like `cancel RUN`).
    public static func parse(_ text: String) -> RunID? {
        Identifier.number(text, prefix: "run-").map(RunID.init)
    }
}

/// A job's key: an integer in SQLite, `job-<n>` everywhere a person or a program sees it.
public struct JobID: Hashable, Comparable, Sendable, CustomStringConvertible, SQLBindable {
    public let value: Int64
    public init(_ value: Int64) { self.value = value }
    public var description: String { "job-\(value)" }
    public var sqlValue: SQLValue { .integer(value) }
    public static func < (a: JobID, b: JobID) -> Bool { a.value < b.value }

    /// Accepts `job-7` or a bare `7` (for arguments whose kind is implied, like `retry JOB`).
    public static func parse(_ text: String) -> JobID? {
        Identifier.number(text, prefix: "job-").map(JobID.init)
    }
}

/// An identifier that may name a run or a job (`adapt show ID`).
public enum Identifier: Hashable, Sendable, CustomStringConvertible {
    case run(RunID)
    case job(JobID)
    /// A bare number: the caller decides which table it means (and refuses it when it means both).
    case number(Int64)

    public static func parse(_ text: String) -> Identifier? {
        if text.hasPrefix("run-") { return RunID.parse(text).map(Identifier.run) }
        if text.hasPrefix("job-") { return JobID.parse(text).map(Identifier.job) }
        return number(text, prefix: "").map(Identifier.number)
    }

    public var description: String {
        switch self {
        case let .run(id): return id.description
        case let .job(id): return id.description
        case let .number(n): return String(n)
        }
    }

    /// The positive integer after `prefix` (or with no prefix at all); nil for anything else.
    static func number(_ text: String, prefix: String) -> Int64? {
        let digits = !prefix.isEmpty && text.hasPrefix(prefix) ? text.dropFirst(prefix.count) : Substring(text)
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
              let value = Int64(digits), value > 0 else { return nil }
        return value
    }
}
