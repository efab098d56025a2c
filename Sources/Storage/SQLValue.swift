import AdaptCore
import Foundation

/// A value as SQLite stores it.
public enum SQLValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)
}

/// A Swift value that can be bound to a statement parameter.
public protocol SQLBindable: Sendable {
    var sqlValue: SQLValue { get }
}

extension SQLValue: SQLBindable { public var sqlValue: SQLValue { self } }
extension Int: SQLBindable { public var sqlValue: SQLValue { .integer(Int64(self)) } }
extension Int64: SQLBindable { public var sqlValue: SQLValue { .integer(self) } }
extension Int32: SQLBindable { public var sqlValue: SQLValue { .integer(Int64(self)) } }
extension Bool: SQLBindable { public var sqlValue: SQLValue { .integer(self ? 1 : 0) } }
extension Double: SQLBindable { public var sqlValue: SQLValue { .real(self) } }
extension String: SQLBindable { public var sqlValue: SQLValue { .text(self) } }
extension Data: SQLBindable { public var sqlValue: SQLValue { .blob(self) } }
extension Digest: SQLBindable { public var sqlValue: SQLValue { .text(hex) } }
extension Optional: SQLBindable where Wrapped: SQLBindable {
    public var sqlValue: SQLValue { self?.sqlValue ?? .null }
}

/// One result row, addressed by column name.
public struct Row: Sendable {
    let columns: [String]
    let values: [SQLValue]

    public subscript(_ name: String) -> SQLValue {
        guard let index = columns.firstIndex(of: name) else { return .null }
        return values[index]
    }

    public var isEmpty: Bool { values.isEmpty }

    public func has(_ name: String) -> Bool { columns.contains(name) }

    public func int64(_ name: String) -> Int64? {
        switch self[name] {
        case let .integer(v): return v
        case let .real(v): return Int64(v)
        default: return nil
        }
    }

    public func int(_ name: String) -> Int? { int64(name).map(Int.init) }

    public func double(_ name: String) -> Double? {
        switch self[name] {
        case let .integer(v): return Double(v)
        case let .real(v): return v
        default: return nil
        }
    }

    public func string(_ name: String) -> String? {
        switch self[name] {
        case let .text(v): return v
        case let .integer(v): return String(v)
        case let .real(v): return String(v)
        default: return nil
        }
    }

    public func data(_ name: String) -> Data? {
        switch self[name] {
        case let .blob(v): return v
        case let .text(v): return Data(v.utf8)
        default: return nil
        }
    }

    public func bool(_ name: String) -> Bool? { int64(name).map { $0 != 0 } }

    public func digest(_ name: String) -> Digest? { string(name).flatMap(Digest.init(hex:)) }

    /// Throws when the column is absent or NULL; for columns the schema declares NOT NULL.
    public func required(_ name: String) throws -> SQLValue {
        let value = self[name]
        if value == .null { throw StorageError.missingColumn(name) }
        return value
    }
}
