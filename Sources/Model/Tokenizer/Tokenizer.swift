import Foundation

/// The kind of a vocabulary entry, as GGUF's `tokenizer.ggml.token_type` numbers it (llama.h,
/// `llama_token_type`).
public enum TokenType: Int, Sendable {
    case undefined = 0, normal = 1, unknown = 2, control = 3, userDefined = 4, unused = 5, byte = 6
}

/// The two vocabulary kinds a GGUF file's `tokenizer.ggml.model` names that this reader tokenizes.
public enum TokenizerKind: String, Sendable, CaseIterable {
    /// `gpt2`: byte-level BPE with ranked merges and a pre-tokenizer.
    case bytePairs = "gpt2"
    /// `llama`: SentencePiece pieces with scores, `▁` for a blank and `<0xNN>` byte fallback.
    case sentencePiece = "llama"
}

/// A tokenizer that agrees token for token with llama.cpp: byte-level BPE (GPT-2 style) or SentencePiece.
///
/// Encoding: control and unknown tokens are cut out of the text first when `parseSpecial` is true,
/// user-defined tokens always (llama.cpp's `tokenizer_st_partition`, longest token text first). For BPE each
/// remaining stretch is split into words by the `PreTokenizer`, each word's UTF-8 bytes become
/// byte symbols, and the merges apply lowest rank first; SentencePiece is `Tokenizer+SentencePiece.swift`.
/// Immutable after `init`, so one instance can serve many threads.
public final class Tokenizer: Sendable {
    public let kind: TokenizerKind
    /// Vocabulary texts as GGUF stores them: byte-level form (`Ġ` for a leading blank) for BPE, `▁` for a
    /// blank in SentencePiece.
    public let tokens: [String]
    public let tokenTypes: [TokenType]
    /// The BPE pre-tokenizer; nil for SentencePiece, which splits nothing before merging.
    public let preTokenizer: PreTokenizer?
    public let bos: Int?
    public let eos: Int?
    /// Whether the model expects BOS in front of a prompt (`tokenizer.ggml.add_bos_token`).
    public let addBOS: Bool
    /// Whether the model expects EOS after a prompt (`tokenizer.ggml.add_eos_token`; SentencePiece only).
    public let addEOS: Bool

    public var count: Int { tokens.count }

    /// Token text → id; when two ids share a text the later wins, as in llama.cpp's `token_to_id`.
    let ids: [String: Int32]
    let merger: BytePairMerger
    /// The symbol of each byte (its one-character token, or a synthetic id).
    let byteSymbols: [Int32]
    /// Texts of synthetic symbols, indexed by id - count.
    let syntheticTexts: [String]
    /// What each id decodes to: the bytes of a normal token, the literal text of a special one.
    let pieceBytes: [[UInt8]]
    /// Specials cut out of the text, longest text first: with `parseSpecial`, and without.
    let specialsParsed: [(id: Int32, bytes: [UInt8])]
    let specialsAlways: [(id: Int32, bytes: [UInt8])]
    /// Specials after which blanks are dropped before the rest is tokenized (llama.cpp's RSTRIP attribute).
    let rightStripped: Set<Int32>
    /// Scores, byte fallback and the blank rule of a SentencePiece vocabulary; nil for BPE.
    let sentencePiece: SentencePieceRules?

    /// Builds a tokenizer from vocabulary data as GGUF stores it.
    ///
    /// - Parameters:
    ///   - tokens: `tokenizer.ggml.tokens`, in byte-level form.
    ///   - merges: `tokenizer.ggml.merges`, `"left right"` per line, in rank order.
    ///   - tokenTypes: `tokenizer.ggml.token_type` (empty means every token is normal).
    ///   - preTokenizer: `tokenizer.ggml.pre` (`smollm`, `gpt2`, `llama-bpe`, `qwen2`, …).
    ///   - stripsBlanksAfterSpecials: llama.cpp's rule for Phi-3 vocabularies (`Tokenizer(gguf:)` sets it).
    public convenience init(tokens: [String], merges: [String], tokenTypes: [Int], preTokenizer: String,
                            bos: Int?, eos: Int?, addBOS: Bool, stripsBlanksAfterSpecials: Bool = false) throws {
        let types = try Self.checkedTypes(tokens: tokens, tokenTypes: tokenTypes, bos: bos, eos: eos)
        guard let rule = PreTokenizer(ggufName: preTokenizer) else {
            throw ModelError.unsupportedPreTokenizer(preTokenizer)
        }
        let ids = Self.idsByText(tokens)

        // Symbols: vocabulary ids, then synthetic ids for texts that merges produce or consume but the
        // vocabulary lacks (llama.cpp merges strings, so such texts can still occur mid-merge).
        var synthetic: [String] = []
        var syntheticIDs: [String: Int32] = [:]
        func symbol(_ text: String) -> Int32 {
            if let id = ids[text] { return id }
            if let id = syntheticIDs[text] { return id }
            let id = Int32(tokens.count + synthetic.count)
            synthetic.append(text)
            syntheticIDs[text] = id
            return id
        }
        var byteSymbols: [Int32] = []
        for byte in 0..<256 { byteSymbols.append(symbol(String(Unicode.Scalar(ByteLevel.scalarForByte[byte])!))) }
        var table = [UInt64: UInt64](minimumCapacity: merges.count)
        for (rank, line) in merges.enumerated() {
            // llama.cpp splits at the first blank after the first character, so a merge may start with one.
            let scalars = line.unicodeScalars
            // A line without one can never apply; llama.cpp keeps it as an empty pair, we skip it.
            guard !scalars.isEmpty,
                  let blank = scalars[scalars.index(after: scalars.startIndex)...].firstIndex(of: " ") else { continue }
            let left = String(scalars[..<blank]), right = String(scalars[scalars.index(after: blank)...])
            let key = BytePairMerger.pairKey(symbol(left), symbol(right))
            if table[key] == nil {  // the first rank of a repeated merge wins, as in llama.cpp's bpe_ranks
                table[key] = UInt64(rank) << 32 | UInt64(UInt32(symbol(left + right)))
            }
        }
        var pieces: [[UInt8]] = []
        pieces.reserveCapacity(tokens.count)
        for (id, text) in tokens.enumerated() {
            switch types[id] {
            case .normal:
                // A character outside the byte mapping is kept as its own UTF-8 (llama.cpp would throw).
                pieces.append(ByteLevel.decode(text) ?? Array(text.utf8))
            case .control, .unknown, .userDefined:
                pieces.append(Array(text.utf8))
            case .undefined, .unused, .byte:
                pieces.append([])  // llama.cpp renders these as nothing for BPE vocabularies
            }
        }
        self.init(kind: .bytePairs, tokens: tokens, types: types, ids: ids, pieces: pieces, preTokenizer: rule,
                  merger: BytePairMerger(merges: MergeTable(table)), byteSymbols: byteSymbols, syntheticTexts: synthetic,
                  sentencePiece: nil, bos: bos, eos: eos, addBOS: addBOS, addEOS: false,
                  stripsBlanksAfterSpecials: stripsBlanksAfterSpecials)
    }

    /// Everything both kinds share; the public initializers work out the rest.
    init(kind: TokenizerKind, tokens: [String], types: [TokenType], ids: [String: Int32], pieces: [[UInt8]],
         preTokenizer: PreTokenizer?, merger: BytePairMerger, byteSymbols: [Int32], syntheticTexts: [String],
         sentencePiece: SentencePieceRules?, bos: Int?, eos: Int?, addBOS: Bool, addEOS: Bool,
         stripsBlanksAfterSpecials: Bool) {
        self.kind = kind
        self.tokens = tokens
        self.tokenTypes = types
        self.ids = ids
        self.pieceBytes = pieces
        self.preTokenizer = preTokenizer
        self.merger = merger
        self.byteSymbols = byteSymbols
        self.syntheticTexts = syntheticTexts
        self.sentencePiece = sentencePiece
        self.bos = bos
        self.eos = eos
        self.addBOS = addBOS
        self.addEOS = addEOS

        func specials(_ kinds: Set<TokenType>) -> [(id: Int32, bytes: [UInt8])] {
            types.indices.filter { kinds.contains(types[$0]) && !tokens[$0].isEmpty }
                .map { (Int32($0), Array(tokens[$0].utf8)) }
                .sorted { $0.bytes.count != $1.bytes.count ? $0.bytes.count > $1.bytes.count : $0.id < $1.id }
        }
        self.specialsParsed = specials([.control, .unknown, .userDefined])
        self.specialsAlways = specials([.userDefined])
        // llama.cpp (llama_vocab::impl::load, "set attributes by model name") marks every special token of a
        // Phi-3 vocabulary RSTRIP but <unk>, <s> and <|endoftext|>, and </s> as well.
        var stripped = Set<Int32>()
        if stripsBlanksAfterSpecials {
            stripped = Set(specialsParsed.map(\.id))
            if let id = ids["</s>"] { stripped.insert(id) }
            for text in ["<unk>", "<s>", "<|endoftext|>"] { if let id = ids[text] { stripped.remove(id) } }
        }
        self.rightStripped = stripped
    }

    /// Whether llama.cpp applies its Phi-3 rule to a file named `name` (`general.name`).
    public static func stripsBlanksAfterSpecials(modelName name: String?) -> Bool {
        guard let lower = name?.lowercased() else { return false }
        return lower.contains("phi-3") || lower.contains("phi3")
    }

    /// The token types, checked against the tokens (empty means every token is normal), after checking the
    /// vocabulary's size and its BOS and EOS ids.
    static func checkedTypes(tokens: [String], tokenTypes: [Int], bos: Int?, eos: Int?) throws -> [TokenType] {
        guard !tokens.isEmpty, tokens.count < Int(Int32.max) / 2 else {
            throw ModelError.invalidVocabulary(reason: "it has \(tokens.count) tokens")
        }
        guard tokenTypes.isEmpty || tokenTypes.count == tokens.count else {
            throw ModelError.invalidVocabulary(reason: "\(tokenTypes.count) token types for \(tokens.count) tokens")
        }
        for (name, id) in [("BOS", bos), ("EOS", eos)] {
            if let id, !(0..<tokens.count).contains(id) {
                throw ModelError.invalidVocabulary(reason: "the \(name) id \(id) is outside the \(tokens.count) tokens")
            }
        }
        var types: [TokenType] = []
        types.reserveCapacity(tokens.count)
        for raw in tokenTypes {
            guard let type = TokenType(rawValue: raw) else {
                throw ModelError.invalidVocabulary(reason: "token type \(raw) is not one of 0…6")
            }
            types.append(type)
        }
        return types.isEmpty ? Array(repeating: .normal, count: tokens.count) : types
    }

    /// Token text → id; when two ids share a text the later wins.
    static func idsByText(_ tokens: [String]) -> [String: Int32] {
        var ids = [String: Int32](minimumCapacity: tokens.count)
        for (id, text) in tokens.enumerated() { ids[text] = Int32(id) }
        return ids
    }

    /// The id of a vocabulary text (byte-level form), if there is one.
    public func id(of text: String) -> Int? { ids[text].map(Int.init) }

    /// Whether `id` is a control, unknown or user-defined token.
    public func isSpecial(_ id: Int) -> Bool {
        guard tokenTypes.indices.contains(id) else { return false }
        return [.control, .unknown, .userDefined].contains(tokenTypes[id])
    }
}
