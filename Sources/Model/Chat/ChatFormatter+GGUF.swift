extension ChatFormatter {
    /// The formatter for the chat template a GGUF model carries (`tokenizer.chat_template`).
    public init(gguf: GGUFFile) throws {
        guard let template = gguf.string("tokenizer.chat_template") else {
            throw ModelError.missingMetadata(key: "tokenizer.chat_template")
        }
        try self.init(template: template)
    }
}
