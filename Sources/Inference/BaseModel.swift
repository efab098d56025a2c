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

    /// Reads the GGUF at `url`: weights, vocabulary (`tokenizer.ggml.*`) and chat template, or the convention
    /// `chatFormat` names (required when the file has no template). `quantizedDecode` as `LlamaModel` takes it:
    /// single tokens and a pass's last logits read from the quantized blocks with 8-bit activations
    /// (generation) or from the f32 weights (logits reported as the model's). `base`: the frozen matrices kept in
    /// the file's types (about the file's size in memory) or dequantized once to f32 (`BaseWeightStorage`).
    public static func load(_ url: URL, quantizedDecode: Bool = true, chatFormat: ChatConvention? = nil,
                            base: BaseWeightStorage = .quantized) throws -> BaseModel {
        let file = try GGUFFile(url: url)
        let tokenizer = try Tokenizer(gguf: file)
        let formatter = try ChatFormatter(gguf: file, chatFormat: chatFormat)
        try formatter.validate(against: tokenizer)
        let model = try LlamaModel(file: file, quantizedDecode: quantizedDecode, base: base)
        return BaseModel(url: url, digest: try Digest.sha256(fileAt: url), model: model, tokenizer: tokenizer,
                         formatter: formatter)
    }

    /// The tokenizer as generation sees it, ending on the chat convention's end-of-turn token too.
    public var vocabulary: TokenizerVocabulary {
        TokenizerVocabulary(tokenizer: tokenizer, endOfTurn: formatter.endOfTurnToken)
    }

    /// Reads the adapter file at `url` and checks it was made for this model: base-model digest, chat
    /// convention and tensor shapes.
    public func adapter(at url: URL) throws -> AdapterBundle<LoRAParameters> {
        let bundle = try AdapterBundle.load(url)
        try bundle.checkMade(for: digest, convention: formatter.conventionName)
        try LlamaBackend(model: model).validate(bundle.weights, name: bundle.name)
        return bundle
    }

    /// A session on this model with its own cache; `catalog` serves `attach(lineage:)` and `reload()`.
    public func session(catalog: (any AdapterCatalog<LoRAParameters>)? = nil) -> InferenceSession<LlamaBackend> {
        InferenceSession(backend: LlamaBackend(model: model), vocabulary: vocabulary, formatter: formatter,
                         baseModelDigest: digest, catalog: catalog)
    }
}
