import Model

/// The model's byte-level BPE tokenizer as generation uses it.
public struct TokenizerVocabulary: GenerationVocabulary {
    public let tokenizer: Tokenizer
    public let endOfGenerationTokens: Set<Int32>

    /// `endOfTurn` is the chat convention's end-of-turn token text (`<|im_end|>` for ChatML).
    public init(tokenizer: Tokenizer, endOfTurn: String?) {
        self.tokenizer = tokenizer
        var ends = Set<Int32>()
        if let eos = tokenizer.eos { ends.insert(Int32(eos)) }
        // llama.cpp's end-of-generation set (llama-vocab.cpp, the `special_eog_ids` scan): EOS, EOT, and every
        // control token whose text is one of the well-known end markers, so a model that closes its turn with
        // `<|im_end|>` or `<|endoftext|>` stops either way.
        let markers = ["<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>",
                       "<|end_of_text|>", "<｜end▁of▁sentence｜>"] + (endOfTurn.map { [$0] } ?? [])
        for marker in markers {
            if let id = tokenizer.id(of: marker), tokenizer.isSpecial(id) { ends.insert(Int32(id)) }
        }
        self.endOfGenerationTokens = ends
    }

    /// A raw prompt, used as given: special tokens parsed, BOS added when the model asks for it.
    public func encode(_ text: String) -> [Int32] {
        tokenizer.encode(text, parseSpecial: true, addBOS: tokenizer.addBOS).map { Int32($0) }
    }

    /// A rendered conversation: special tokens only where the template wrote them, BOS added when the model asks
    /// for it.
    public func encode(_ chat: ChatText) -> [Int32] {
        tokenizer.encode(chat, markers: .text, addBOS: tokenizer.addBOS).map { Int32($0) }
    }

    public func bytes(of token: Int32) -> [UInt8] {
        (try? tokenizer.pieceBytes(Int(token))) ?? []
    }
}

extension ChatFormatter: PromptFormatter {
    public var conventionName: String { convention.rawValue }

    public func render(_ messages: [ChatMessage], enableThinking: Bool) throws -> ChatText {
        try chatText(messages, addGenerationPrompt: true, enableThinking: enableThinking)
    }
}
