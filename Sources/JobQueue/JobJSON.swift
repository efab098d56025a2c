import AdaptCore

/// JSON text of job inputs and outputs, on the claim/complete path, without Foundation's coders.
///
/// Foundation's `JSONEncoder`/`JSONDecoder` cost tens of microseconds per call (a boxed container per value,
/// and `JSONValue`'s decoder tries each type in turn, throwing on each miss); a busy worker pays that twice
/// per job. The fast paths here handle the common shapes — objects, arrays, `null`, `true`/`false`, integers,
/// and strings of printable ASCII — and hand everything else (fractions, exponents, escapes, non-ASCII text,
/// duplicate keys) to `JSON.canonicalString`/`JSON.decode`, so the text and the value are always exactly what
/// Foundation gives. `JobJSONTests` checks both directions against Foundation on seeded random documents.
enum JobJSON {
    /// The canonical text of `value`: byte for byte `JSON.canonicalString(value)`.
    static func canonicalString(_ value: JSONValue) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        guard write(value, into: &out) else { return JSON.canonicalString(value) }
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses `text`: the same value `JSON.decode(JSONValue.self, from: text, …)` gives, and the same errors.
    static func decode(_ text: String, context: String) throws -> JSONValue {
        var text = text
        let fast: JSONValue? = text.withUTF8 { bytes in
            var parser = Parser(bytes: bytes)
            guard let value = parser.value() else { return nil }
            parser.skipSpace()
            return parser.index == bytes.count ? value : nil
        }
        if let fast { return fast }
        return try JSON.decode(JSONValue.self, from: text, context: context)
    }

    // MARK: Writing

    /// Appends the canonical text of `value`; false when it holds something only Foundation may spell.
    private static func write(_ value: JSONValue, into out: inout [UInt8]) -> Bool {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case let .bool(b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case let .int(i): out.append(contentsOf: String(i).utf8)
        case .double: return false
        case let .string(s): return writeString(s, into: &out)
        case let .array(items):
            out.append(UInt8(ascii: "["))
            for (n, item) in items.enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                guard write(item, into: &out) else { return false }
            }
            out.append(UInt8(ascii: "]"))
        case let .object(fields):
            out.append(UInt8(ascii: "{"))
            // Keys are plain ASCII here (writeString refuses others), where Foundation's sorted order is the
            // byte order.
            for (n, key) in fields.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                guard writeString(key, into: &out) else { return false }
                out.append(UInt8(ascii: ":"))
                guard write(fields[key]!, into: &out) else { return false }
            }
            out.append(UInt8(ascii: "}"))
        }
        return true
    }

    /// Printable ASCII without `"` or `\` is written as it is; anything else goes to Foundation.
    private static func writeString(_ s: String, into out: inout [UInt8]) -> Bool {
        out.append(UInt8(ascii: "\""))
        for byte in s.utf8 {
            guard byte >= 0x20, byte < 0x7f, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") else { return false }
            out.append(byte)
        }
        out.append(UInt8(ascii: "\""))
        return true
    }

    // MARK: Reading

    /// A recursive-descent reader of RFC 8259 text that gives up (nil) on whatever it leaves to Foundation.
    private struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0
        var depth = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x0a, 0x0d, 0x09].contains(bytes[index]) { index += 1 }
        }

        mutating func value() -> JSONValue? {
            skipSpace()
            guard index < bytes.count, depth < 64 else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "{"): return object()
            case UInt8(ascii: "["): return array()
            case UInt8(ascii: "\""): return string().map(JSONValue.string)
            case UInt8(ascii: "t"): return literal("true", .bool(true))
            case UInt8(ascii: "f"): return literal("false", .bool(false))
            case UInt8(ascii: "n"): return literal("null", .null)
            default: return integer()
            }
        }

        mutating func literal(_ word: StaticString, _ value: JSONValue) -> JSONValue? {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { return nil }
            for k in 0..<count where bytes[index + k] != word.utf8Start[k] { return nil }
            index += count
            return value
        }

        /// `-?(0|[1-9][0-9]*)` that fits an Int and is not followed by a fraction or an exponent.
        mutating func integer() -> JSONValue? {
            var k = index
            let negative = k < bytes.count && bytes[k] == UInt8(ascii: "-")
            if negative { k += 1 }
            let start = k
            var magnitude: UInt64 = 0
            while k < bytes.count, bytes[k] >= UInt8(ascii: "0"), bytes[k] <= UInt8(ascii: "9") {
                let (times, o1) = magnitude.multipliedReportingOverflow(by: 10)
                let (plus, o2) = times.addingReportingOverflow(UInt64(bytes[k] - UInt8(ascii: "0")))
                guard !o1, !o2 else { return nil }
                magnitude = plus
                k += 1
            }
            let digits = k - start
            guard digits > 0, digits == 1 || bytes[start] != UInt8(ascii: "0") else { return nil }
            if k < bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[k]) { return nil }
            guard magnitude <= UInt64(Int.max) else { return nil }
            index = k
            let value = Int(magnitude)
            // "-0" is an integer zero for Foundation too, but leave the rare case to it rather than guess.
            if negative && value == 0 { return nil }
            return .int(negative ? -value : value)
        }

        /// A string of printable ASCII without escapes.
        mutating func string() -> String? {
            var k = index + 1
            while k < bytes.count {
                let byte = bytes[k]
                if byte == UInt8(ascii: "\"") {
                    let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[(index + 1)..<k]), as: UTF8.self)
                    index = k + 1
                    return text
                }
                guard byte >= 0x20, byte < 0x7f, byte != UInt8(ascii: "\\") else { return nil }
                k += 1
            }
            return nil
        }

        mutating func array() -> JSONValue? {
            index += 1
            depth += 1
            defer { depth -= 1 }
            var items: [JSONValue] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
            while true {
                guard let item = value() else { return nil }
                items.append(item)
                skipSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                guard bytes[index] == UInt8(ascii: "]") else { return nil }
                index += 1
                return .array(items)
            }
        }

        mutating func object() -> JSONValue? {
            index += 1
            depth += 1
            defer { depth -= 1 }
            var fields: [String: JSONValue] = [:]
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(fields) }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let key = string() else { return nil }
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
                index += 1
                guard let item = value() else { return nil }
                // Which of two equal keys wins is Foundation's business.
                guard fields.updateValue(item, forKey: key) == nil else { return nil }
                skipSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                guard bytes[index] == UInt8(ascii: "}") else { return nil }
                index += 1
                return .object(fields)
            }
        }
    }
}
