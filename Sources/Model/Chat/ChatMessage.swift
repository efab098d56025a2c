/// One turn of a conversation: `system`, `user` or `assistant`, and its text.
public struct ChatMessage: Sendable, Equatable, Hashable, Codable {
    public var role: String
    public var content: String

    public init(role: String, content: String) {
        self.role = role
        self.content = content
    }

    public static func system(_ content: String) -> ChatMessage { ChatMessage(role: "system", content: content) }
    public static func user(_ content: String) -> ChatMessage { ChatMessage(role: "user", content: content) }
    public static func assistant(_ content: String) -> ChatMessage { ChatMessage(role: "assistant", content: content) }
}

/// The turn formats the formatter knows, named as adapters record them.
public enum ChatConvention: String, Sendable, CaseIterable, Codable {
    /// `<|im_start|>role\n…<|im_end|>\n` (SmolLM, Qwen).
    case chatml
    /// `<|start_header_id|>role<|end_header_id|>\n\n…<|eot_id|>` (Llama 3).
    case llama3
    /// `<start_of_turn>role\n…<end_of_turn>\n`, the assistant called `model`, no system turn (Gemma).
    case gemma
    /// `<|role|>\n…<|end|>\n` (Phi-3 and Phi-3.5).
    case phi3
    /// No turn markers: the turns' texts concatenated (a base model without a chat template, named explicitly
    /// with `--chat-format plain`; never recognised from a template).
    case plain

    /// Recognises the family of a Jinja chat template by the turn markers it writes.
    public init?(template: String) {
        if template.contains("<|im_start|>") {
            self = .chatml
        } else if template.contains("<|start_header_id|>") {
            self = .llama3
        } else if template.contains("<start_of_turn>") {
            self = .gemma
        } else if template.contains("<|assistant|>") && template.contains("<|end|>") {
            self = .phi3
        } else {
            return nil
        }
    }

    /// The conventions a template is recognised as, for messages.
    static var templateNames: String {
        allCases.filter { $0 != .plain }.map(\.rawValue).joined(separator: ", ")
    }

    /// The control tokens the convention writes; a vocabulary without them cannot use it.
    public var markers: [String] {
        switch self {
        case .chatml: return ["<|im_start|>", "<|im_end|>"]
        case .llama3: return ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
        case .gemma: return ["<start_of_turn>", "<end_of_turn>"]
        case .phi3: return ["<|user|>", "<|assistant|>", "<|end|>"]
        case .plain: return []
        }
    }
}
