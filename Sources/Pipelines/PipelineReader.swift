import AdaptCore

/// Reads a pipeline document field by field, applying defaults and collecting every problem instead of
/// stopping at the first, so `adapt pipeline check` can list them all at once.
///
/// The fields a section asks for are its schema: whatever is left in the object afterwards is an unknown key,
/// reported with the nearest known key as a suggestion.
final class PipelineReader {
    private(set) var problems: [PipelineProblem] = []

    func report(_ path: String, _ message: String) {
        problems.append(PipelineProblem(path: path, message: message))
    }

    /// Renders a value the user wrote for a message: short, and never more than a few dozen characters.
    static func render(_ value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case let .bool(b): return b ? "true" : "false"
        case let .int(i): return String(i)
        case let .double(d): return String(d)
        case let .string(s): return "\"\(PipelineError.abbreviated(s))\""
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}

/// One JSON object being read: knows its path, which keys were asked for, and reports through its reader.
final class ObjectReader {
    let path: String
    let fields: [String: JSONValue]
    let reader: PipelineReader
    private var asked: [String] = []

    init(path: String, fields: [String: JSONValue], reader: PipelineReader) {
        self.path = path
        self.fields = fields
        self.reader = reader
    }

    func path(of key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// The raw value under `key`, recording that the key is known.
    func value(_ key: String) -> JSONValue? {
        asked.append(key)
        return fields[key]
    }

    func has(_ key: String) -> Bool { fields[key] != nil }

    private func complain(_ key: String, _ requirement: String, _ value: JSONValue) {
        reader.report(path(of: key), "\(path(of: key)) must be \(requirement), got \(PipelineReader.render(value))")
    }

    /// An integer of at least `minimum` (`requirement` says so, e.g. "a positive integer") and at most `maximum`.
    func integer(_ key: String, default fallback: Int, minimum: Int, maximum: Int = Int.max, _ requirement: String) -> Int {
        guard let value = value(key) else { return fallback }
        guard let number = value.intValue, number >= minimum else {
            complain(key, requirement, value)
            return fallback
        }
        guard number <= maximum else {
            complain(key, minimum == maximum ? requirement : "at most \(maximum)", value)
            return fallback
        }
        return number
    }

    func number(_ key: String, default fallback: Double, _ requirement: String, where valid: (Double) -> Bool) -> Double {
        guard let value = value(key) else { return fallback }
        guard let number = value.doubleValue, number.isFinite, valid(number) else {
            complain(key, requirement, value)
            return fallback
        }
        return number
    }

    func text(_ key: String, default fallback: String, _ requirement: String, where valid: (String) -> Bool = { _ in true }) -> String {
        guard let value = value(key) else { return fallback }
        guard let text = value.stringValue, valid(text) else {
            complain(key, requirement, value)
            return fallback
        }
        return text
    }

    func boolean(_ key: String, default fallback: Bool) -> Bool {
        guard let value = value(key) else { return fallback }
        guard case let .bool(flag) = value else {
            complain(key, "true or false", value)
            return fallback
        }
        return flag
    }

    /// A required string: a missing key is a problem of its own.
    func requiredText(_ key: String, _ requirement: String, where valid: (String) -> Bool) -> String? {
        guard let value = value(key) else {
            reader.report(path(of: key), "\(path(of: key)) is required: \(requirement)")
            return nil
        }
        guard let text = value.stringValue, valid(text) else {
            complain(key, requirement, value)
            return nil
        }
        return text
    }

    /// One of a fixed set of words, with a suggestion when the word is a near miss.
    func choice<T: RawRepresentable & CaseIterable>(_ key: String, default fallback: T) -> T where T.RawValue == String {
        guard let value = value(key) else { return fallback }
        let names = T.allCases.map(\.rawValue)
        if let text = value.stringValue, let chosen = T(rawValue: text) { return chosen }
        var message = "\(path(of: key)) must be one of \(names.joined(separator: ", ")), got \(PipelineReader.render(value))"
        if let text = value.stringValue, let near = NearestName.suggestion(for: text, among: names) {
            message += "; did you mean \(near)?"
        }
        reader.report(path(of: key), message)
        return fallback
    }

    /// A nested object; a missing key reads as `{}` so every field takes its default.
    func object(_ key: String) -> ObjectReader {
        let childPath = path(of: key)
        guard let value = value(key) else { return ObjectReader(path: childPath, fields: [:], reader: reader) }
        guard let fields = value.objectValue else {
            complain(key, "an object", value)
            return ObjectReader(path: childPath, fields: [:], reader: reader)
        }
        return ObjectReader(path: childPath, fields: fields, reader: reader)
    }

    /// An array of strings, each checked by `element`, which returns a problem text or nil.
    func strings(_ key: String, default fallback: [String], _ requirement: String) -> [String]? {
        guard let value = value(key) else { return fallback }
        guard let items = value.arrayValue else {
            complain(key, requirement, value)
            return nil
        }
        var result: [String] = []
        for (index, item) in items.enumerated() {
            guard let text = item.stringValue else {
                let itemPath = "\(path(of: key))[\(index)]"
                reader.report(itemPath, "\(itemPath) must be a string, got \(PipelineReader.render(item))")
                return nil
            }
            result.append(text)
        }
        return result
    }

    /// Reports every key nobody asked for; call once after all fields are read.
    func finish() {
        let known = asked
        for key in fields.keys.sorted() where !known.contains(key) {
            var message = "\(path(of: key)) is not a known field"
            if let near = NearestName.suggestion(for: key, among: known) {
                message += "; did you mean \(path(of: near))?"
            } else {
                message += " of \(path.isEmpty ? "a pipeline" : path); known fields: \(Self.unique(known).joined(separator: ", "))"
            }
            reader.report(path(of: key), message)
        }
    }

    private static func unique(_ names: [String]) -> [String] {
        var seen: [String] = []
        for name in names where !seen.contains(name) { seen.append(name) }
        return seen
    }
}
