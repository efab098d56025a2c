import Model

/// Token ids of one piece of a formatted conversation, and whether training takes the loss on them.
public struct TokenSegment: Sendable, Equatable {
    public var tokens: [Int]
    public var isTarget: Bool

    public init(tokens: [Int], isTarget: Bool) {
        self.tokens = tokens
        self.isTarget = isTarget
    }
}

extension LoRATrainingRun {
    /// Token ids of a whole conversation, cut by `ChatFormatter.trainingSegments`: context is tokenized as the
    /// prompt of a single exchange is (the template's control tokens, the turns' text under `markers`, BOS first
    /// when the model asks for it), every assistant reply as a completion is (its own text never turns into control
    /// tokens, then the end-of-turn marker), so a one-exchange conversation gives exactly `tokens(of:)`'s ids. Every
    /// assistant reply is a target: the loss is taken on what the assistant wrote and on nothing the user or the
    /// system wrote.
    public static func tokens(of conversation: [ChatMessage], tokenizer: Tokenizer, formatter: ChatFormatter,
                              markers: PromptMarkers = .text) throws -> [TokenSegment] {
        var result: [TokenSegment] = []
        for segment in try formatter.trainingSegments(conversation) {
            if segment.isAssistant {
                let content = String(segment.text.dropLast(formatter.endOfTurn.count))
                result.append(TokenSegment(tokens: tokenizer.encode(content, parseSpecial: false)
                    + tokenizer.encode(formatter.endOfTurn, parseSpecial: true), isTarget: true))
            } else {
                result.append(TokenSegment(tokens: tokenizer.encode(segment.chatText, markers: markers,
                                                                    addBOS: result.isEmpty && tokenizer.addBOS),
                                           isTarget: false))
            }
        }
        return result
    }

    /// The segments of an example: its conversation's, or its prompt and completion's.
    public static func segments(of example: TrainingExample, tokenizer: Tokenizer, formatter: ChatFormatter,
                                markers: PromptMarkers = .text) throws -> [TokenSegment] {
        if let conversation = example.conversation {
            return try tokens(of: conversation, tokenizer: tokenizer, formatter: formatter, markers: markers)
        }
        let (prompt, completion) = try tokens(of: example, tokenizer: tokenizer, formatter: formatter, markers: markers)
        return [TokenSegment(tokens: prompt, isTarget: false), TokenSegment(tokens: completion, isTarget: true)]
    }
}

extension [TokenSegment] {
    /// The same tokens with only the last target left a target: held-out scoring judges the final reply given
    /// everything before it, earlier replies included.
    public var lastTargetOnly: [TokenSegment] {
        guard let last = lastIndex(where: \.isTarget) else { return self }
        return enumerated().map { TokenSegment(tokens: $1.tokens, isTarget: $0 == last) }
    }
}
