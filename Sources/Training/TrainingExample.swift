import AdaptCore
import Foundation
import Model

/// One example to learn from, as a person wrote it: a prompt, the completion the model should give, and how
/// much it counts; or a whole conversation, whose every assistant turn the model should give.
public struct TrainingExample: Sendable, Equatable {
    public var prompt: String
    public var completion: String
    public var weight: Float
    /// Every turn of a conversation of more than one exchange (nil: the example is `prompt` and `completion`,
    /// formatted as one user turn and one assistant turn).
    public var conversation: [ChatMessage]?

    /// The weights an example may carry besides 0 (which skips it). A weight multiplies the example's loss in
    /// f32: a JSON number past f32's range becomes infinity or 0, and one near f32's limits makes the
    /// summed loss overflow, so a weight must sit well inside the range — twelve orders of magnitude of
    /// emphasis between the smallest and the largest are more than any dataset needs.
    public static let weightRange: ClosedRange<Double> = 1e-6...1e6

    /// Whether `weight` is 0 or inside `weightRange` (every source of examples checks with this).
    public static func isValidWeight(_ weight: Double) -> Bool {
        weight == 0 || weightRange.contains(weight)
    }

    public init(prompt: String, completion: String, weight: Float = 1) {
        self.prompt = prompt
        self.completion = completion
        self.weight = weight
    }

    /// A whole conversation; `prompt` and `completion` are its last user turn and its final turn.
    public init(conversation: [ChatMessage], weight: Float = 1) {
        self.prompt = conversation.dropLast().last(where: { $0.role == "user" })?.content ?? ""
        self.completion = conversation.last?.content ?? ""
        self.weight = weight
        self.conversation = conversation
    }

    /// Parses JSON Lines of `{"prompt": …, "completion": …, "weight": …}` (weight optional, default 1; other
    /// fields ignored; blank lines skipped). Errors name the file and line, never the line's text.
    public static func parseJSONLines(_ data: Data, name: String) throws -> [TrainingExample] {
        struct Line: Decodable {
            var prompt: String
            var completion: String
            var weight: Double?
        }
        var examples: [TrainingExample] = []
        var lineNumber = 0
        for line in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            let parsed: Line
            do { parsed = try JSONDecoder().decode(Line.self, from: Data(line)) } catch let error as DecodingError {
                throw TrainingError.invalidDataset(file: name, line: lineNumber, reason: Self.reason(error))
            }
            if let duplicate = JSONDuplicateKeys.first(in: line) {
                throw TrainingError.invalidDataset(file: name, line: lineNumber, reason: duplicate.message(includingLine: false))
            }
            let weight = parsed.weight ?? 1
            guard isValidWeight(weight) else {
                throw TrainingError.invalidDataset(file: name, line: lineNumber,
                    reason: "weight must be 0 (skip the example) or between \(weightRange.lowerBound) and \(weightRange.upperBound), got \(weight)")
            }
            examples.append(TrainingExample(prompt: parsed.prompt, completion: parsed.completion, weight: Float(weight)))
        }
        return examples
    }

    /// A description of a decoding failure that names fields, not values.
    static func reason(_ error: DecodingError) -> String {
        switch error {
        case let .keyNotFound(key, _): return "missing field \"\(key.stringValue)\""
        case let .typeMismatch(_, context): return "field \"\(context.codingPath.last?.stringValue ?? "?")\" has the wrong type"
        case let .valueNotFound(_, context): return "field \"\(context.codingPath.last?.stringValue ?? "?")\" is null"
        case .dataCorrupted: return "not a JSON object"
        @unknown default: return "not a JSON object"
        }
    }
}
