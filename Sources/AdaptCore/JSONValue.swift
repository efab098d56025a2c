import Foundation

/// An untyped JSON document: job inputs and outputs, metadata, anything stored as JSON text.
public enum JSONValue: Sendable, Equatable, Codable, CustomStringConvertible {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let value = try? container.decode(Bool.self) { self = .bool(value) }
        else if let value = try? container.decode(Int.self) { self = .int(value) }
        else if let value = try? container.decode(Double.self) { self = .double(value) }
        else if let value = try? container.decode(String.self) { self = .string(value) }
        else if let value = try? container.decode([JSONValue].self) { self = .array(value) }
        else { self = .object(try container.decode([String: JSONValue].self)) }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case let .bool(value): try container.encode(value)
        case let .int(value): try container.encode(value)
        case let .double(value): try container.encode(value)
        case let .string(value): try container.encode(value)
        case let .array(value): try container.encode(value)
        case let .object(value): try container.encode(value)
        }
    }

    public subscript(key: String) -> JSONValue? {
        if case let .object(fields) = self { return fields[key] }
        return nil
    }

    public var stringValue: String? { if case let .string(s) = self { return s }; return nil }
    public var boolValue: Bool? { if case let .bool(b) = self { return b }; return nil }
    public var intValue: Int? {
        switch self {
        case let .int(i): return i
        case let .double(d) where d.rounded() == d && abs(d) < 9e15: return Int(d)
        default: return nil
        }
    }
    public var doubleValue: Double? {
        switch self {
        case let .int(i): return Double(i)
        case let .double(d): return d
        default: return nil
        }
    }
    public var arrayValue: [JSONValue]? { if case let .array(a) = self { return a }; return nil }
    public var objectValue: [String: JSONValue]? { if case let .object(o) = self { return o }; return nil }

    /// Canonical text (sorted keys, no whitespace), so equal values have equal digests.
    public var description: String { JSON.canonicalString(self) }
}

/// Canonical JSON encoding and decoding shared by storage, digests and the command line.
public enum JSON {
    /// Sorted keys and no insignificant whitespace: the form that is hashed and stored.
    public static func canonical<T: Encodable>(_ value: T) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        do { return try encoder.encode(value) } catch {
            preconditionFailure("encoding \(T.self) to JSON failed: \(error)")
        }
    }

    public static func canonicalString<T: Encodable>(_ value: T) -> String {
        String(decoding: canonical(value), as: UTF8.self)
    }

    /// Indented, sorted keys: what `--json` prints for people and scripts alike.
    public static func pretty<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        do { return String(decoding: try encoder.encode(value), as: UTF8.self) } catch {
            preconditionFailure("encoding \(T.self) to JSON failed: \(error)")
        }
    }

    public static func digest<T: Encodable>(_ value: T) -> Digest { Digest.sha256(canonical(value)) }

    /// Decodes `data`, naming `context` (a file, a column, a command-line value) in the error. An object with a
    /// repeated key is refused (`JSONDuplicateKeys`).
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data, context: String) throws -> T {
        let value: T
        do { value = try JSONDecoder().decode(type, from: data) } catch let error as DecodingError {
            throw CoreError.invalidJSON(context: context, reason: describe(error))
        } catch {
            throw CoreError.invalidJSON(context: context, reason: "\(error)")
        }
        if let duplicate = JSONDuplicateKeys.first(in: data) {
            throw CoreError.invalidJSON(context: context, reason: duplicate.description)
        }
        return value
    }

    public static func decode<T: Decodable>(_ type: T.Type, from text: String, context: String) throws -> T {
        try decode(type, from: Data(text.utf8), context: context)
    }

    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return keys.isEmpty ? "" : " at \(keys)"
        }
        switch error {
        case let .keyNotFound(key, context): return "missing field \"\(key.stringValue)\"\(path(context))"
        case let .typeMismatch(type, context): return "expected \(type)\(path(context))"
        case let .valueNotFound(type, context): return "expected \(type), found null\(path(context))"
        case let .dataCorrupted(context): return context.debugDescription + path(context)
        @unknown default: return "\(error)"
        }
    }
}

/// A key that names any JSON field, for listing the fields an object actually has.
private struct AnyKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension Decoder {
    /// Throws when the object being decoded has a field outside `known`: a misspelt optional field (say
    /// `depends-on`) would otherwise be dropped without a word and change what the input means.
    public func rejectUnknownFields<Key: CodingKey & CaseIterable>(_ known: Key.Type) throws {
        let names = Set(Key.allCases.map(\.stringValue))
        let container = try self.container(keyedBy: AnyKey.self)
        if let unknown = container.allKeys.map(\.stringValue).sorted().first(where: { !names.contains($0) }) {
            throw DecodingError.dataCorrupted(.init(
                codingPath: codingPath,
                debugDescription: "unknown field \"\(unknown)\" (the fields are \(names.sorted().joined(separator: ", ")))"))
        }
    }
}
