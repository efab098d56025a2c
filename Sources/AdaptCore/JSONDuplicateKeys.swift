import Foundation

/// Finds a key that appears twice in one JSON object.
///
/// RFC 8259 leaves duplicate names to the parser; Foundation's decoders keep one value without a word, and
/// not the one jq, Python or JavaScript keep (the last). A file that says `"learning_rate": 0.001` and later
/// `"learning_rate": 0.1` would mean one thing to adapt and another to every tool used to inspect it, so
/// every reader of a user's JSON (import lines, pipeline files, run descriptions, score files, training data)
/// refuses it, through `JSON.decode` or by calling `first(in:)` itself. Call it on text already known to be
/// valid JSON: it only follows strings and brackets, it does not check the grammar.
public enum JSONDuplicateKeys {
    public struct Duplicate: Sendable, Equatable {
        /// The key as decoded (`"a"` and `"\u0061"` are the same key).
        public let key: String
        /// 1-based line of the key's second occurrence in the text.
        public let line: Int
        /// Where the object is: `$`, `$.train`, `$.steps[2]`.
        public let path: String

        /// `key "lr" appears twice in one object at line 3 (in $.train); …`, the key cut to 60 characters and
        /// its controls escaped.
        public var description: String { message(includingLine: true) }

        /// The same without the line, for a reader that already names it (`line 7: key "prompt" …` in JSONL).
        public func message(includingLine: Bool) -> String {
            let shown = key.count > 60 ? String(key.prefix(59)) + "…" : key
            let visible = String(String.UnicodeScalarView(shown.unicodeScalars.flatMap { scalar -> [Unicode.Scalar] in
                scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
                    ? Array("\\u{\(String(scalar.value, radix: 16))}".unicodeScalars) : [scalar]
            }))
            return "key \"\(visible)\" appears twice in one object\(includingLine ? " at line \(line)" : "") (in \(path)); "
                + "keep one: other tools read the last value, adapt would read the first"
        }
    }

    private enum Frame {
        case object(keys: Set<String>, path: String, expectingKey: Bool, lastKey: String?)
        case array(path: String, index: Int)

        var path: String {
            switch self {
            case let .object(_, path, _, _), let .array(path, _): return path
            }
        }
    }

    /// The first repeated key in `bytes`, in document order, or nil.
    public static func first<Bytes: Collection>(in bytes: Bytes) -> Duplicate? where Bytes.Element == UInt8 {
        let data = Array(bytes)
        var stack: [Frame] = []
        var line = 1
        var index = 0

        /// Where a value that starts now sits, for the path of an object or array opened here.
        func childPath() -> String {
            switch stack.last {
            case nil: return "$"
            case let .object(_, path, _, lastKey)?: return path + "." + (lastKey ?? "?")
            case let .array(path, index)?: return path + "[\(index)]"
            }
        }

        while index < data.count {
            let byte = data[index]
            switch byte {
            case UInt8(ascii: "\n"):
                line += 1
            case UInt8(ascii: "\""):
                let start = index
                index += 1
                var escaped = false
                while index < data.count {
                    let b = data[index]
                    if b == UInt8(ascii: "\n") { line += 1 }
                    if b == UInt8(ascii: "\\") { escaped = true; index += 2; continue }
                    if b == UInt8(ascii: "\"") { break }
                    index += 1
                }
                guard case .object(var keys, let path, true, _)? = stack.last else { break }
                let raw = Array(data[start...min(index, data.count - 1)])
                let key = escaped ? ((try? JSONDecoder().decode(String.self, from: Data(raw))) ?? String(decoding: raw, as: UTF8.self))
                    : String(decoding: raw.dropFirst().dropLast(), as: UTF8.self)
                if keys.contains(key) { return Duplicate(key: key, line: line, path: path) }
                keys.insert(key)
                stack[stack.count - 1] = .object(keys: keys, path: path, expectingKey: false, lastKey: key)
            case UInt8(ascii: "{"):
                stack.append(.object(keys: [], path: childPath(), expectingKey: true, lastKey: nil))
            case UInt8(ascii: "["):
                stack.append(.array(path: childPath(), index: 0))
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                _ = stack.popLast()
            case UInt8(ascii: ","):
                switch stack.last {
                case let .object(keys, path, _, lastKey)?:
                    stack[stack.count - 1] = .object(keys: keys, path: path, expectingKey: true, lastKey: lastKey)
                case let .array(path, position)?:
                    stack[stack.count - 1] = .array(path: path, index: position + 1)
                case nil:
                    break
                }
            default:
                break
            }
            index += 1
        }
        return nil
    }
}
