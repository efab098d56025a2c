extension Tokenizer {
    /// The tokenizer a GGUF model file describes (`tokenizer.ggml.*`).
    ///
    /// Byte-level BPE (`tokenizer.ggml.model` = `gpt2`) and SentencePiece (`llama`) are supported; any other
    /// model type is a typed error naming it.
    public convenience init(gguf: GGUFFile) throws {
        guard let model = gguf.string("tokenizer.ggml.model") else {
            throw ModelError.missingMetadata(key: "tokenizer.ggml.model")
        }
        guard let kind = TokenizerKind(rawValue: model) else { throw ModelError.unsupportedTokenizer(model: model) }
        guard let tokens = gguf.stringArray("tokenizer.ggml.tokens") else {
            throw ModelError.missingMetadata(key: "tokenizer.ggml.tokens")
        }
        if kind == .sentencePiece {
            try self.init(sentencePieceGGUF: gguf, tokens: tokens)
            return
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
                      addBOS: gguf.bool("tokenizer.ggml.add_bos_token") ?? (PreTokenizer(ggufName: pre) == .llama3),
                      stripsBlanksAfterSpecials: Self.stripsBlanksAfterSpecials(modelName: gguf.string("general.name")))
    }

    /// llama.cpp's SentencePiece defaults where a key is absent: BOS 1, EOS 2 (each only if inside the
    /// vocabulary), add BOS, no EOS, a space prefix.
    private convenience init(sentencePieceGGUF gguf: GGUFFile, tokens: [String]) throws {
        var scores: [Float] = []
        if let stored = gguf.metadata["tokenizer.ggml.scores"] {
            guard let values = gguf.doubleArray("tokenizer.ggml.scores"), values.count >= tokens.count else {
                throw ModelError.invalidVocabulary(reason: "tokenizer.ggml.scores holds \(stored.arrayValue?.count ?? 0) numbers for \(tokens.count) tokens")
            }
            scores = values.prefix(tokens.count).map { Float($0) }
        }
        func special(_ key: String, default value: Int) -> Int? {
            if let id = gguf.int(key) { return id }
            return value < tokens.count ? value : nil
        }
        try self.init(sentencePieceTokens: tokens, scores: scores,
                      tokenTypes: gguf.intArray("tokenizer.ggml.token_type") ?? [],
                      bos: special("tokenizer.ggml.bos_token_id", default: 1),
                      eos: special("tokenizer.ggml.eos_token_id", default: 2),
                      addBOS: gguf.bool("tokenizer.ggml.add_bos_token") ?? true,
                      addEOS: gguf.bool("tokenizer.ggml.add_eos_token") ?? false,
                      addSpacePrefix: gguf.bool("tokenizer.ggml.add_space_prefix") ?? true,
                      stripsBlanksAfterSpecials: Self.stripsBlanksAfterSpecials(modelName: gguf.string("general.name")))
    }
}
