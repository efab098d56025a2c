extension ChatFormatter {
    /// The formatter for the chat template a GGUF model carries (`tokenizer.chat_template`), or for the
    /// convention named by `chatFormat` (`--chat-format`, a pipeline's `train.chat_format`). A model without a
    /// template needs the name: a base model is refused rather than given some chat model's turn markers.
    public init(gguf: GGUFFile, chatFormat: ChatConvention? = nil) throws {
        let template = gguf.string("tokenizer.chat_template")
        guard let chatFormat else {
            guard let template else { throw ModelError.noChatTemplate }
            try self.init(template: template)
            return
        }
        // The template's own formatter when it is of the named family: it also knows the default system line
        // and the thinking switch, and its digest is the template's.
        if let template, ChatConvention(template: template) == chatFormat, let formatter = try? ChatFormatter(template: template) {
            self = formatter
        } else {
            self.init(convention: chatFormat)
        }
    }
}
