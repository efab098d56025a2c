/// A piece of a formatted conversation: text the model reads, or an assistant reply it learns to write.
public struct ChatSegment: Sendable, Equatable {
    /// The segment's text, knowing which of it the template wrote.
    public var chatText: ChatText
    /// True for an assistant turn's content and the end of that turn (what training takes the loss on).
    public var isAssistant: Bool

    public var text: String { chatText.text }

    public init(chatText: ChatText, isAssistant: Bool) {
        self.chatText = chatText
        self.isAssistant = isAssistant
    }
}

extension ChatFormatter {
    /// A conversation that ends with an assistant turn, cut where training puts its boundaries: every
    /// assistant turn that answers a user turn (its content and the end of the turn) is an assistant segment,
    /// and everything between them (earlier turns, the openings of assistant turns) is context. The segments
    /// join to exactly `format(messages, addGenerationPrompt: false)`; for one user turn and one assistant turn
    /// they are `trainingPair`'s prompt and completion.
    ///
    /// An assistant turn before any user turn has nothing it answers and stays context.
    public func trainingSegments(_ messages: [ChatMessage]) throws -> [ChatSegment] {
        _ = try trainingPair(messages)  // the same checks as a single exchange: a final assistant turn after a turn
        guard let firstUser = messages.firstIndex(where: { $0.role == "user" }) else {
            throw ModelError.invalidChatMessages(reason: "a training conversation needs a user turn before its assistant turns")
        }
        var segments: [ChatSegment] = []
        var consumed = ""
        for index in messages.indices where index > firstUser && messages[index].role == "assistant" {
            let context = try chatText(Array(messages[..<index]), addGenerationPrompt: true)
            let content = trimsContent ? Self.trimmed(messages[index].content) : messages[index].content
            let through = try format(Array(messages[...index]), addGenerationPrompt: false)
            // The template renders each turn on its own, so a prefix of the conversation renders as a prefix
            // of its text; a template where that fails cannot be cut into segments.
            guard context.text.hasPrefix(consumed), through == context.text + content + endOfTurn else {
                throw ModelError.invalidChatMessages(reason: "the \(convention.rawValue) template does not render this conversation turn by turn")
            }
            // A prefix in characters is one in bytes too: both texts come from the same turns.
            segments.append(ChatSegment(chatText: context.dropFirst(bytes: consumed.utf8.count), isAssistant: false))
            var reply = ChatText()
            reply.appendData(content)
            reply.appendTemplate(endOfTurn)
            segments.append(ChatSegment(chatText: reply, isAssistant: true))
            consumed = through
        }
        return segments
    }
}
