import AdaptCore
import Foundation

/// One record read from a JSONL line, before scrubbing.
public struct ImportRecord: Sendable, Equatable {
    public let line: Int
    public let system: String?
    public let prompt: String
    public let completion: String
    public let source: String?
    public let weight: Double?
    /// Every turn of a `messages` record that is more than one exchange (see `Conversation.isSingleExchange`);
    /// nil otherwise. `system`, `prompt` and `completion` are then its first system turn, its last user turn
    /// and its final assistant turn.
    public var turns: [Turn]? = nil
}

/// A line that cannot be imported: its 1-based number and why (never its text).
public struct LineProblem: Error, Sendable, Equatable, Codable, CustomStringConvertible {
    public let line: Int
    public let reason: String
    public init(line: Int, reason: String) {
        self.line = line
        self.reason = reason
    }
    public var description: String { "line \(line): \(reason)" }
}

/// Reads JSONL in the formats people already have:
/// - `{"prompt": …, "completion": …}` (both required),
/// - mlx-lm chat `{"messages": [{"role": …, "content": …}, …]}`: the last message must be the assistant's,
///   with a user message before it. Every turn is kept, in order; the completion is the last message, the
///   prompt the last user message before it and `system` the first system message (if any).
/// - `{"text": …}`: a completion with an empty prompt.
/// Any of them may carry `"source"` (a string) and `"weight"` (a number in `Example.weightRange`, 1e-6 to 1e6).
/// Other fields are ignored.
/// Blank lines are skipped; a UTF-8 byte-order mark on the first line is ignored.
public struct JSONLReader: Sendable {
    /// Lines longer than this (in bytes) are refused before they are parsed.
    public var maxRecordBytes: Int

    public init(maxRecordBytes: Int = 256 * 1024) { self.maxRecordBytes = maxRecordBytes }

    public func read(_ data: Data) -> (records: [ImportRecord], problems: [LineProblem]) {
        var records: [ImportRecord] = []
        var problems: [LineProblem] = []
        let bytes = [UInt8](data)
        var lineNumber = 0
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count, bytes[end] != 0x0A { end += 1 }
            lineNumber += 1
            var line = bytes[start..<end]
            start = end + 1
            if line.last == 0x0D { line = line.dropLast() }
            if lineNumber == 1, line.starts(with: [0xEF, 0xBB, 0xBF]) { line = line.dropFirst(3) }
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            switch parse(line, number: lineNumber) {
            case let .success(record): records.append(record)
            case let .failure(problem): problems.append(problem)
            }
        }
        return (records, problems)
    }

    func parse(_ line: ArraySlice<UInt8>, number: Int) -> Result<ImportRecord, LineProblem> {
        func bad(_ reason: String) -> Result<ImportRecord, LineProblem> { .failure(LineProblem(line: number, reason: reason)) }
        guard line.count <= maxRecordBytes else {
            return bad("record is \(line.count) bytes, over the limit of \(maxRecordBytes)")
        }
        guard String(validating: line, as: UTF8.self) != nil else { return bad("invalid UTF-8") }
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(line)) else { return bad("invalid JSON") }
        if let duplicate = JSONDuplicateKeys.first(in: line) { return bad(duplicate.message(includingLine: false)) }
        guard case let .object(fields) = value else { return bad("not a JSON object") }

        var source: String?
        if let raw = fields["source"], raw != .null {
            guard let text = raw.stringValue else { return bad("field \"source\" must be a string") }
            guard !text.isEmpty, text.count <= 200 else { return bad("field \"source\" must be 1 to 200 characters") }
            source = text
        }
        var weight: Double?
        if let raw = fields["weight"], raw != .null {
            guard let number = raw.doubleValue, Example.weightRange.contains(number) else {
                return bad("field \"weight\" must be a number from 0.000001 to 1000000")
            }
            weight = number
        }

        let system: String?
        let prompt: String
        let completion: String
        var turns: [Turn]?
        if let messages = fields["messages"] {
            switch chat(messages) {
            case let .success(conversation):
                guard let exchange = Conversation.lastExchange(conversation) else {
                    return bad("no user message before the last assistant message")
                }
                (system, prompt, completion) = exchange
                if !Conversation.isSingleExchange(conversation) { turns = conversation }
            case let .failure(reason): return bad(reason.text)
            }
        } else if fields["prompt"] != nil || fields["completion"] != nil {
            guard let rawPrompt = fields["prompt"] else { return bad("missing field \"prompt\"") }
            guard let rawCompletion = fields["completion"] else { return bad("missing field \"completion\"") }
            guard let p = rawPrompt.stringValue else { return bad("field \"prompt\" must be a string") }
            guard let c = rawCompletion.stringValue else { return bad("field \"completion\" must be a string") }
            (system, prompt, completion) = (nil, p, c)
        } else if let rawText = fields["text"] {
            guard let t = rawText.stringValue else { return bad("field \"text\" must be a string") }
            (system, prompt, completion) = (nil, "", t)
        } else {
            return bad("unknown format: expected \"prompt\" and \"completion\", \"messages\" or \"text\"")
        }
        if completion.allSatisfy(\.isWhitespace) { return bad("empty completion") }
        for (name, text) in [("system", system ?? ""), ("prompt", prompt), ("completion", completion), ("source", source ?? "")]
        where text.utf8.contains(0) {
            return bad("field \"\(name)\" contains a NUL character")
        }
        // Ids and stored turns are NUL-separated, so no turn may hold one either.
        if let index = turns?.firstIndex(where: { $0.content.utf8.contains(0) }) {
            return bad("messages[\(index)] contains a NUL character")
        }
        return .success(ImportRecord(line: number, system: system, prompt: prompt, completion: completion,
                                     source: source, weight: weight, turns: turns))
    }

    struct Reason: Error { let text: String }

    /// Every turn of a `messages` array, checked: known roles, string contents, a final assistant turn with a
    /// user turn before it.
    private func chat(_ value: JSONValue) -> Result<[Turn], Reason> {
        guard let messages = value.arrayValue else { return .failure(Reason(text: "field \"messages\" must be an array")) }
        guard !messages.isEmpty else { return .failure(Reason(text: "field \"messages\" is empty")) }
        var turns: [Turn] = []
        for (index, message) in messages.enumerated() {
            guard case .object = message else { return .failure(Reason(text: "messages[\(index)] must be an object")) }
            guard let role = message["role"]?.stringValue else {
                return .failure(Reason(text: "messages[\(index)] needs a string \"role\""))
            }
            guard let known = Turn.Role(rawValue: role) else {
                return .failure(Reason(text: "messages[\(index)] has an unknown role (expected system, user or assistant)"))
            }
            guard let content = message["content"]?.stringValue else {
                return .failure(Reason(text: "messages[\(index)] needs a string \"content\""))
            }
            turns.append(Turn(role: known, content: content))
        }
        guard let last = turns.last, last.role == .assistant else {
            return .failure(Reason(text: "the last message must be the assistant's"))
        }
        guard turns.dropLast().contains(where: { $0.role == .user }) else {
            return .failure(Reason(text: "no user message before the last assistant message"))
        }
        return .success(turns)
    }
}
