import AdaptCore
import Foundation

/// Formats conversations into prompt text exactly as the model's chat template renders them.
///
/// Training and generation both go through this one type, so a prompt the adapter was trained on and
/// a prompt it is asked at run time cannot drift apart. It is not a Jinja engine: it recognises the
/// template's family (`ChatConvention`) and reads what varies within a family off the template text
/// itself: the default system line a ChatML template inserts when the conversation has none
/// (SmolLM2, Qwen2.5), and whether the template has a thinking switch (`enable_thinking`, Qwen3).
/// BOS is never part of the text: the tokenizer adds it when the model asks for it.
public struct ChatFormatter: Sendable {
    public let convention: ChatConvention
    /// SHA-256 (hex) of the template text, for adapters to record next to `convention`.
    public let templateDigest: String
    /// The system line used when a conversation starts without one, read from the template.
    public let defaultSystem: String?
    /// Whether the template honours `enable_thinking` (Qwen3: an empty `<think>` block when off).
    public var supportsThinking: Bool { emptyThinking != nil }
    /// What the template writes after the generation prompt when thinking is off.
    public let emptyThinking: String?

    /// Detects the convention of a GGUF `tokenizer.chat_template`.
    public init(template: String) throws {
        guard let convention = ChatConvention(template: template) else {
            throw ModelError.unknownChatTemplate(digest: Digest.sha256(template).hex)
        }
        // Variants whose output depends on more than the messages are refused rather than approximated.
        if convention == .llama3 && template.contains("Cutting Knowledge Date") {
            throw ModelError.unsupportedChatTemplate(convention: "llama3", feature: "a dated system header (Llama 3.1 and later)")
        }
        if convention == .chatml && template.contains("Reasoning Mode") {
            throw ModelError.unsupportedChatTemplate(convention: "chatml", feature: "a metadata system header (SmolLM3)")
        }
        self.convention = convention
        self.templateDigest = Digest.sha256(template).hex
        self.defaultSystem = convention == .chatml ? Self.defaultSystemLine(in: template) : nil
        self.emptyThinking = convention == .chatml ? Self.emptyThinkingBlock(in: template) : nil
    }

    /// A formatter for a named convention without a template (for models that lack one); the digest is
    /// that of the empty template.
    public init(convention: ChatConvention) {
        self.convention = convention
        self.templateDigest = Digest.sha256("").hex
        self.defaultSystem = nil
        self.emptyThinking = nil
    }

    /// The text of `messages`, followed by the opening of an assistant turn when
    /// `addGenerationPrompt` is true. `enableThinking: false` closes an empty thinking block right
    /// after that opening on templates that support it; elsewhere it has no effect.
    public func format(_ messages: [ChatMessage], addGenerationPrompt: Bool = true,
                       enableThinking: Bool = true) throws -> String {
        try chatText(messages, addGenerationPrompt: addGenerationPrompt, enableThinking: enableThinking).text
    }

    /// `format`'s text, knowing which of it the template wrote: the markers, the role names (fixed words the
    /// code chooses, never data) and the default system line. Each message's content is data.
    public func chatText(_ messages: [ChatMessage], addGenerationPrompt: Bool = true,
                         enableThinking: Bool = true) throws -> ChatText {
        var text = ChatText()
        switch convention {
        case .chatml:
            if let defaultSystem, let first = messages.first, first.role != "system" {
                text.appendTemplate("<|im_start|>system\n" + defaultSystem + "<|im_end|>\n")
            }
            for message in messages {
                text.appendTemplate("<|im_start|>" + message.role + "\n")
                text.appendData(message.content)
                text.appendTemplate("<|im_end|>\n")
            }
        case .llama3:
            for message in messages {
                text.appendTemplate("<|start_header_id|>" + message.role + "<|end_header_id|>\n\n")
                text.appendData(Self.trimmed(message.content))
                text.appendTemplate("<|eot_id|>")
            }
        case .gemma:
            var turns = messages[...]
            var system: String?
            if let first = turns.first, first.role == "system" {
                system = first.content
                turns = turns.dropFirst()
            }
            for (index, message) in turns.enumerated() {
                guard (message.role == "user") == (index % 2 == 0) else {
                    throw ModelError.invalidChatMessages(
                        reason: "gemma turns must alternate user and assistant after an optional system turn (turn \(index + 1) is \(message.role))")
                }
                guard message.role == "user" || message.role == "assistant" else {
                    throw ModelError.invalidChatMessages(reason: "gemma knows the roles system, user and assistant, not \(message.role)")
                }
                let role = message.role == "assistant" ? "model" : message.role
                text.appendTemplate("<start_of_turn>" + role + "\n")
                if index == 0, let system {
                    text.appendData(system)
                    text.appendTemplate("\n\n")
                }
                text.appendData(Self.trimmed(message.content))
                text.appendTemplate("<end_of_turn>\n")
            }
        case .phi3:
            for message in messages {
                guard ["system", "user", "assistant"].contains(message.role) else {
                    throw ModelError.invalidChatMessages(reason: "phi3 knows the roles system, user and assistant, not \(message.role)")
                }
                text.appendTemplate("<|" + message.role + "|>\n")
                text.appendData(message.content)
                text.appendTemplate("<|end|>\n")
            }
        case .plain:
            for message in messages { text.appendData(message.content) }
        }
        if addGenerationPrompt {
            text.appendTemplate(generationPrompt)
            if let emptyThinking, !enableThinking { text.appendTemplate(emptyThinking) }
        }
        return text
    }

    /// A conversation that ends with an assistant turn, split where training puts the boundary: the
    /// prompt is everything up to and including the opening of that turn, the completion its content
    /// and the end of the turn. `prompt + completion` is exactly `format(messages, addGenerationPrompt: false)`.
    public func trainingPair(_ messages: [ChatMessage]) throws -> (prompt: String, completion: String) {
        let pair = try trainingPairText(messages)
        return (pair.prompt.text, pair.completion)
    }

    /// `trainingPair` with the prompt as `ChatText`, so that only the template's markers become control tokens.
    public func trainingPairText(_ messages: [ChatMessage]) throws -> (prompt: ChatText, completion: String) {
        guard messages.count >= 2, let last = messages.last, last.role == "assistant" else {
            throw ModelError.invalidChatMessages(reason: "a training example needs at least one turn before a final assistant turn")
        }
        let prompt = try chatText(Array(messages.dropLast()), addGenerationPrompt: true)
        let content = trimsContent ? Self.trimmed(last.content) : last.content
        return (prompt, content + endOfTurn)
    }

    /// Whether the template trims each turn's content (Jinja's `| trim`: Llama 3 and Gemma).
    var trimsContent: Bool {
        convention == .llama3 || convention == .gemma
    }

    /// The opening of an assistant turn.
    public var generationPrompt: String {
        switch convention {
        case .chatml: return "<|im_start|>assistant\n"
        case .llama3: return "<|start_header_id|>assistant<|end_header_id|>\n\n"
        case .gemma: return "<start_of_turn>model\n"
        case .phi3: return "<|assistant|>\n"
        case .plain: return ""
        }
    }

    /// What closes an assistant turn after its content: a completion used for training ends with it.
    public var endOfTurn: String {
        switch convention {
        case .chatml: return "<|im_end|>\n"
        case .llama3: return "<|eot_id|>"
        case .gemma: return "<end_of_turn>\n"
        case .phi3: return "<|end|>\n"
        case .plain: return ""
        }
    }

    /// The control token that ends an assistant turn; generation stops on it (and on EOS). Nil for `plain`,
    /// where only EOS ends a completion.
    public var endOfTurnToken: String? {
        switch convention {
        case .chatml: return "<|im_end|>"
        case .llama3: return "<|eot_id|>"
        case .gemma: return "<end_of_turn>"
        case .phi3: return "<|end|>"
        case .plain: return nil
        }
    }

    /// Checks that `tokenizer` has the convention's control tokens.
    public func validate(against tokenizer: Tokenizer) throws {
        for marker in convention.markers where tokenizer.id(of: marker) == nil {
            throw ModelError.chatConventionMissingToken(convention: convention.rawValue, token: marker)
        }
    }

    /// Jinja's `trim`: Python's `str.strip()`, which removes Unicode white space at both ends (and the
    /// four ASCII separators U+001C…U+001F, which Python counts as space too).
    static func trimmed(_ text: String) -> String {
        func isSpace(_ scalar: Unicode.Scalar) -> Bool {
            scalar.properties.isWhitespace || (0x1C...0x1F).contains(scalar.value)
        }
        let scalars = text.unicodeScalars
        guard let start = scalars.firstIndex(where: { !isSpace($0) }) else { return "" }
        let end = scalars.lastIndex(where: { !isSpace($0) })!
        return String(scalars[start...end])
    }

    /// The literal system text a ChatML template writes when the first message is not a system one:
    /// the string constant that follows `<|im_start|>system` (after a real or escaped newline) up to
    /// `<|im_end|>`, provided it contains no template expression.
    static func defaultSystemLine(in template: String) -> String? {
        var search = template[...]
        while let open = search.range(of: "<|im_start|>system") {
            var rest = template[open.upperBound...]
            if rest.hasPrefix("\n") {
                rest = rest.dropFirst()
            } else if rest.hasPrefix("\\n") {
                rest = rest.dropFirst(2)
            } else {
                search = template[open.upperBound...]
                continue
            }
            if let close = rest.range(of: "<|im_end|>") {
                let raw = String(rest[..<close.lowerBound])
                if !raw.isEmpty && !raw.contains("'") && !raw.contains("\"") && !raw.contains("{") && !raw.contains("}") {
                    return unescapeJinja(raw)
                }
            }
            search = template[open.upperBound...]
        }
        return nil
    }

    /// The string literal holding an empty `<think>…</think>` block that the template writes in the branch
    /// it guards with `enable_thinking` (Qwen3 writes `<think>\n\n</think>\n\n`), or nil when the template
    /// has no such switch.
    static func emptyThinkingBlock(in template: String) -> String? {
        guard let switchRange = template.range(of: "enable_thinking") else { return nil }
        let rest = template[switchRange.upperBound...]
        for quote in ["'", "\""] {
            var search = rest
            while let open = search.range(of: quote) {
                let body = search[open.upperBound...]
                guard let close = body.range(of: quote) else { break }
                let literal = String(body[..<close.lowerBound])
                if literal.hasPrefix("<think>") && literal.contains("</think>") { return unescapeJinja(literal) }
                search = body[close.upperBound...]
            }
        }
        return nil
    }

    /// Resolves the backslash escapes of a Jinja string literal (`\n`, `\t`, `\\`).
    private static func unescapeJinja(_ text: String) -> String {
        guard text.contains("\\") else { return text }
        var result = ""
        var escaping = false
        for character in text {
            if escaping {
                switch character {
                case "n": result.append("\n")
                case "t": result.append("\t")
                case "r": result.append("\r")
                default: result.append(character)
                }
                escaping = false
            } else if character == "\\" {
                escaping = true
            } else {
                result.append(character)
            }
        }
        return result
    }
}
