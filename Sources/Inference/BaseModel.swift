import AdaptCore
import Foundation
import Model

/// A base model file loaded once: the transformer, its tokenizer and chat formatter, and the file's digest
/// that adapters are checked against.
public struct BaseModel: Sendable {
    public let url: URL
    /// SHA-256 of the GGUF file, as adapters record it.
    public let digest: Digest
    public let model: LlamaModel
    public let tokenizer: Tokenizer
    public let formatter: ChatFormatter

    /// Reads the GGUF at `url`: weights, vocabulary (`tokenizer.ggml.*`) and chat template.
    public static func load(_ url: URL) throws -> BaseModel {
        let file = try GGUFFile(url: url)
        let model = try LlamaModel(file: file)
        let tokenizer = try tokenizer(from: file)
        let formatter = try file.string("tokenizer.chat_template").map { try ChatFormatter(template: $0) }
            ?? ChatFormatter(convention: .chatml)
        try formatter.validate(against: tokenizer)
        return BaseModel(url: url, digest: try Digest.sha256(fileAt: url), model: model, tokenizer: tokenizer,
                         formatter: formatter)
    }

    /// The vocabulary GGUF stores under `tokenizer.ggml.*` (the GGUF spec's tokenizer keys).
    static func tokenizer(from file: GGUFFile) throws -> Tokenizer {
        let kind = file.string("tokenizer.ggml.model") ?? "(none)"
        guard kind == "gpt2" else { throw ModelError.unsupportedTokenizer(model: kind) }
        guard let tokens = file.stringArray("tokenizer.ggml.tokens") else {
            throw ModelError.missingMetadata(key: "tokenizer.ggml.tokens")
        }
        guard let merges = file.stringArray("tokenizer.ggml.merges") else {
            throw ModelError.missingMetadata(key: "tokenizer.ggml.merges")
        }
        return try Tokenizer(tokens: tokens, merges: merges, tokenTypes: file.intArray("tokenizer.ggml.token_type") ?? [],
                             preTokenizer: file.string("tokenizer.ggml.pre") ?? "gpt2",
                             bos: file.int("tokenizer.ggml.bos_token_id"), eos: file.int("tokenizer.ggml.eos_token_id"),
                             addBOS: file.bool("tokenizer.ggml.add_bos_token") ?? false)
    }

    /// The tokenizer as generation sees it, ending on the chat convention's end-of-turn token too.
    public var vocabulary: TokenizerVocabulary {
        TokenizerVocabulary(tokenizer: tokenizer, endOfTurn: formatter.endOfTurnToken)
    }

    /// A session on this model with its own cache; `catalog` serves `attach(lineage:)` and `reload()`.
    public func session(catalog: (any AdapterCatalog<LoRAParameters>)? = nil) -> InferenceSession<LlamaBackend> {
        InferenceSession(backend: LlamaBackend(model: model), vocabulary: vocabulary, formatter: formatter,
                         baseModelDigest: digest, catalog: catalog)
    }
}
