import AdaptCore
import Foundation

/// A file of per-example scores could not be used. Messages name the file and the position, never its text.
enum ScoreFileError: Error, CustomStringConvertible {
    case unreadable(path: String, reason: String)
    case notANumber(path: String, position: String)
    case notFinite(path: String, position: String)
    case empty(path: String)
    case notAnArray(path: String)
    case unequalLengths(candidate: String, candidateCount: Int, baseline: String, baselineCount: Int)

    var description: String {
        switch self {
        case let .unreadable(path, reason):
            return "cannot read \(path): \(reason)"
        case let .notANumber(path, position):
            return "\(path) \(position) is not a number; write one number per line or a JSON array of numbers"
        case let .notFinite(path, position):
            return "\(path) \(position) is not finite (NaN or infinity); rescore that example or drop it from both files"
        case let .empty(path):
            return "\(path) holds no scores; pass one loss per held-out example"
        case let .notAnArray(path):
            return "\(path) starts with '[' but is not a valid JSON array of finite numbers"
        case let .unequalLengths(candidate, candidateCount, baseline, baselineCount):
            return "\(candidate) has \(candidateCount) scores but \(baseline) has \(baselineCount); both must list the same examples in the same order"
        }
    }
}

/// Reads per-example scores: a JSON array of numbers, or one number per line.
enum ScoreFile {
    static func read(_ path: String, role: String) throws -> [Double] {
        let name = path == "-" ? "standard input (\(role))" : path
        let data: Data
        if path == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let contents = FileManager.default.contents(atPath: path) else {
                throw ScoreFileError.unreadable(path: path, reason: UnreadablePath.reason(path))
            }
            data = contents
        }
        let text = String(decoding: data, as: UTF8.self)
        let values = text.drop(while: \.isWhitespace).first == "[" ? try parseJSON(data, name: name) : try parseLines(text, name: name)
        guard !values.isEmpty else { throw ScoreFileError.empty(path: name) }
        return values
    }

    static func parseJSON(_ data: Data, name: String) throws -> [Double] {
        guard let array = (try? JSONDecoder().decode(JSONValue.self, from: data))?.arrayValue else {
            throw ScoreFileError.notAnArray(path: name)
        }
        if let duplicate = JSONDuplicateKeys.first(in: data) {
            throw CoreError.invalidJSON(context: name, reason: duplicate.description)
        }
        return try array.enumerated().map { index, element in
            guard let value = element.doubleValue else { throw ScoreFileError.notANumber(path: name, position: "element [\(index)]") }
            guard value.isFinite else { throw ScoreFileError.notFinite(path: name, position: "element [\(index)]") }
            return value
        }
    }

    static func parseLines(_ text: String, name: String) throws -> [Double] {
        var values: [Double] = []
        for (offset, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.isEmpty { continue }
            // Double(_:) also reads hexadecimal ("0x10" is 16); a score file holds decimal numbers only.
            guard !trimmed.contains(where: { $0 == "x" || $0 == "X" }), let value = Double(trimmed) else { throw ScoreFileError.notANumber(path: name, position: "line \(offset + 1)") }
            guard value.isFinite else { throw ScoreFileError.notFinite(path: name, position: "line \(offset + 1)") }
            values.append(value)
        }
        return values
    }
}
