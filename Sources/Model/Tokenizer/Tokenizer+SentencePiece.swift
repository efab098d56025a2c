extension Tokenizer {
    /// Builds a SentencePiece tokenizer (`tokenizer.ggml.model = llama`) from vocabulary data as GGUF stores it.
    ///
    /// - Parameters:
    ///   - tokens: `tokenizer.ggml.tokens`, `▁` standing for a blank.
    ///   - scores: `tokenizer.ggml.scores` (empty means every score is 0); the higher merges first.
    ///   - tokenTypes: `tokenizer.ggml.token_type` (empty means every token is normal).
    ///   - addSpacePrefix: `tokenizer.ggml.add_space_prefix`: a blank in front of the text and after each
    ///     special token (llama.cpp's default for this kind is true; Gemma's files say false).
    /// Every byte value needs a fallback token, `<0xNN>` (or, for ASCII, the one-character token), so that
    /// any text encodes.
    ///   - stripsBlanksAfterSpecials: llama.cpp's rule for Phi-3 vocabularies (`Tokenizer(gguf:)` sets it).
    public convenience init(sentencePieceTokens tokens: [String], scores: [Float], tokenTypes: [Int],
                            bos: Int?, eos: Int?, addBOS: Bool, addEOS: Bool, addSpacePrefix: Bool,
                            stripsBlanksAfterSpecials: Bool = false) throws {
        let types = try Self.checkedTypes(tokens: tokens, tokenTypes: tokenTypes, bos: bos, eos: eos)
        guard scores.isEmpty || scores.count == tokens.count else {
            throw ModelError.invalidVocabulary(reason: "\(scores.count) scores for \(tokens.count) tokens")
        }
        if addBOS && bos == nil { throw ModelError.invalidVocabulary(reason: "add_bos_token is set but there is no BOS id") }
        if addEOS && eos == nil { throw ModelError.invalidVocabulary(reason: "add_eos_token is set but there is no EOS id") }
        var byteIDs: [[UInt8]: Int32] = [:]
        byteIDs.reserveCapacity(tokens.count)
        for (id, text) in tokens.enumerated() { byteIDs[Array(text.utf8)] = Int32(id) }
        var byteTokens: [Int32] = []
        for byte in 0..<256 {
            let hex = String(byte, radix: 16, uppercase: true)
            let name = "<0x" + (byte < 16 ? "0" : "") + hex + ">"
            guard let id = byteIDs[Array(name.utf8)] ?? (byte < 0x80 ? byteIDs[[UInt8(byte)]] : nil) else {
                throw ModelError.invalidVocabulary(reason: "no byte-fallback token \(name), so some text could not be encoded")
            }
            byteTokens.append(id)
        }
        var pieces: [[UInt8]] = []
        pieces.reserveCapacity(tokens.count)
        for (id, text) in tokens.enumerated() {
            switch types[id] {
            case .normal:
                pieces.append(Array(text.replacingOccurrences(of: "\u{2581}", with: " ").utf8))
            case .byte:
                guard let value = Self.byteValue(text) else {
                    throw ModelError.invalidVocabulary(reason: "byte token \(id) is not of the form <0xNN>")
                }
                pieces.append([value])
            case .control, .unknown, .userDefined:
                pieces.append(Array(text.utf8))
            case .undefined, .unused:
                pieces.append([])  // llama.cpp renders these as nothing
            }
        }
        let rules = SentencePieceRules(scores: scores.isEmpty ? Array(repeating: 0, count: tokens.count) : scores,
                                       ids: byteIDs, byteTokens: byteTokens, addSpacePrefix: addSpacePrefix)
        self.init(kind: .sentencePiece, tokens: tokens, types: types, ids: Self.idsByText(tokens), pieces: pieces,
                  preTokenizer: nil, merger: BytePairMerger(merges: MergeTable([:])), byteSymbols: [], syntheticTexts: [],
                  sentencePiece: rules, bos: bos, eos: eos, addBOS: addBOS, addEOS: addEOS,
                  stripsBlanksAfterSpecials: stripsBlanksAfterSpecials)
    }

    /// Whether decoding drops one blank in front of the first token: the one encoding put there.
    public var addSpacePrefix: Bool { sentencePiece?.addSpacePrefix ?? false }

    /// The byte a `<0xNN>` token stands for.
    static func byteValue(_ text: String) -> UInt8? {
        let utf8 = Array(text.utf8)
        guard utf8.count == 6, text.hasPrefix("<0x"), text.hasSuffix(">") else { return nil }
        return UInt8(String(decoding: utf8[3..<5], as: UTF8.self), radix: 16)
    }
}
