extension Tokenizer {
    /// The tokenizer a GGUF model file describes (`tokenizer.ggml.*`).
    ///
    /// Only byte-level BPE (`tokenizer.ggml.model` = `gpt2`) is supported; any other model type is a
    /// typed error naming it.
    public convenience init(gguf: GGUFFile) throws {
        guard let model = gguf.string("tokenizer.ggml.model") else {
            throw ModelError.missingMetadata(key: "tokenizer.ggml.model")
        }
        guard model == "gpt2" else { throw ModelError.unsupportedTokenizer(model: model) }
        guard let tokens = gguf.stringArray("tokenizer.ggml.tokens") else {
            throw ModelError.missingMetadata(key: "tokenizer.ggml.tokens")
        }
        guard let merges = gguf.stringArray("tokenizer.ggml.merges") else {
            throw ModelError.missingMetadata(key: "tokenizer.ggml.merges")
        }
        // A file that predates tokenizer.ggml.pre gets llama.cpp's "default" rule, which is not one of
        // ours, so such a file is refused by name rather than tokenized differently. Without
        // add_bos_token, llama.cpp adds BOS for the Llama-3 rule only.
        let pre = gguf.string("tokenizer.ggml.pre") ?? "default"
        try self.init(tokens: tokens, merges: merges,
                      tokenTypes: gguf.intArray("tokenizer.ggml.token_type") ?? [],
                      preTokenizer: pre,
                      bos: gguf.int("tokenizer.ggml.bos_token_id"),
                      eos: gguf.int("tokenizer.ggml.eos_token_id"),
                      addBOS: gguf.bool("tokenizer.ggml.add_bos_token") ?? (PreTokenizer(ggufName: pre) == .llama3))
    }
}
