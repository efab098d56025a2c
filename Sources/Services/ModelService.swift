import AdaptCore
import Foundation
import Inference
import Model

/// Running the model itself for `model tiny`, `model synth`, `model inspect`, `logits`, `score` and `tokenize`.
public enum ModelService {
    /// What --threads accepts wherever it is given (train's bound: each is a thread the system must start).
    public static let threadRange = 1...BLAS.maximumThreads

    /// A prompt that encodes to no token: `logits` has no position to show.
    public struct EmptyPrompt: Error {}

    /// Token ids with a way to show each as the text it stands for.
    public struct Tokens: Sendable {
        public let ids: [Int]
        let tokenizer: Tokenizer

        /// The text token `id` stands for (a byte that is only part of a character shows as <0xNN>).
        public func piece(_ id: Int) throws -> String { try tokenizer.piece(id) }
    }

    /// The model file a command reads: `given`, or the state's default model; a missing one is an error that
    /// says how to fetch the default (`fetchHint`) or that the given path does not exist.
    public static func modelURL(given: String?, state: StateDirectory, fetchHint: Bool) throws -> URL {
        let url = given.map { URL(fileURLWithPath: $0) } ?? state.defaultModel
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw ModelError.fileUnreadable(
                path: url.path, reason: fetchHint && given == nil ? "the default model is not there; run scripts/fetch-model" : UnreadablePath.reason(url.path))
        }
        return url
    }

    /// Writes a tiny random-weight GGUF of one architecture variant (for tests and CI); without `chatTemplate`,
    /// a base model's file (no `tokenizer.chat_template`).
    public static func writeTinyModel(seed: UInt64, variant: String, chatTemplate: Bool = true, to url: URL) throws {
        var model = TinyModel(seed: seed, variant: variant)
        if !chatTemplate { model.template = nil }
        try model.write(to: url)
    }

    /// The architecture variants `writeTinyModel` writes.
    public static var tinyModelVariants: [String] { TinyModel.variants }

    /// Writes an F16 GGUF with seeded random weights in the shape of the published model `shape` names
    /// (`PublishedShape`), for benchmarks where the real file cannot be fetched; `blocks` and `vocabulary` make a
    /// smaller file of the same block shapes. Returns the number of weights written.
    @discardableResult
    public static func writeSyntheticModel(shape name: String, seed: UInt64, blocks: Int? = nil, vocabulary: Int? = nil,
                                           to url: URL) throws -> Int {
        guard var shape = PublishedShape.named(name) else { preconditionFailure("unknown shape \(name): the option checks it") }
        precondition(vocabulary.map { $0 >= syntheticVocabularyMinimum } ?? true, "the option checks the vocabulary's size")
        let model = TinyModel(seed: seed, shape: shape, blocks: blocks, vocabulary: vocabulary)
        try model.write(to: url)
        shape.blockCount = model.blockCount
        shape.vocabularySize = vocabulary ?? shape.vocabularySize
        return shape.parameterCount
    }

    /// The published shapes `writeSyntheticModel` writes.
    public static var syntheticShapeNames: [String] { PublishedShape.names }

    /// The fewest tokens a synthetic vocabulary can have: the built-in ones it extends.
    public static var syntheticVocabularyMinimum: Int { TinyModel.vocabulary.tokens.count }

    /// Reads (does not load) the GGUF at `url`.
    public static func inspect(_ url: URL) throws -> ModelInspection {
        try ModelInspection(url: url)
    }

    /// The ids of `text` under the model's tokenizer (BOS never added).
    public static func tokenize(_ text: String, model url: URL, parseSpecial: Bool) throws -> Tokens {
        let tokenizer = try Tokenizer(gguf: try GGUFFile(url: url))
        return Tokens(ids: tokenizer.encode(text, parseSpecial: parseSpecial), tokenizer: tokenizer)
    }

    /// The `k` largest logits of the token after `prompt` (its ids in `prompt`), with `adapter` applied when given.
    /// `chatFormat` is the convention an adapter must have been trained under (the prompt is never formatted).
    public static func logits(prompt: String, parseSpecial: Bool, top k: Int, model url: URL, adapter: URL?,
                              threads: Int?, chatFormat: ChatConvention? = nil,
                              baseWeights: BaseWeightStorage = .quantized) throws -> (prompt: Tokens, top: [(id: Int, logit: Float)]) {
        if let threads { try BLAS.setThreads(threads) }
        // In f32 arithmetic throughout (the weights dequantized, the activations not rounded): these are the
        // model's logits, compared with other implementations', not a decode step, whose 8-bit activations move
        // them by up to about one unit.
        let base = try load(url, chatFormat: chatFormat, formatsPrompt: false, baseWeights: baseWeights)
        let lora = try adapter.map { try base.adapter(at: $0).weights }
        // BOS as the model asks for it (`add_bos_token`), as llama.cpp tokenizes a prompt: Gemma's logits
        // without it are another model's (its NLL on plain English doubles).
        let ids = base.tokenizer.encode(prompt, parseSpecial: parseSpecial, addBOS: base.tokenizer.addBOS)
        guard !ids.isEmpty else { throw EmptyPrompt() }
        try requireContext(ids.count, "the prompt is", base.model)
        var cache = KVCache()
        let logits = base.model.forward(tokens: ids, lora: lora, cache: &cache)
        try LlamaModel.requireFinite(logits)
        return (Tokens(ids: ids, tokenizer: base.tokenizer), LlamaModel.top(k, of: logits))
    }

    /// A completion scored under teacher forcing.
    public struct Score: Sendable {
        public let prompt: Tokens
        public let completion: Tokens
        /// One per scored completion token (the last `logprobs.count` of `completion.ids`).
        public let logprobs: [Double]
        /// nil when no token is scored.
        public var meanNLL: Double? { logprobs.isEmpty ? nil : -logprobs.reduce(0, +) / Double(logprobs.count) }
    }

    /// Scores `completion` after `prompt`, tokenized separately and concatenated (the boundary training uses);
    /// `chat` formats the prompt as a user turn of the model's chat template (or of `chatFormat`, required for a
    /// model without a template), followed by the assistant opening. Control-token text in `prompt` and
    /// `completion` stays text, as in training, unless `parseSpecial` asks for it to be parsed.
    public static func score(prompt: String, completion: String, chat: Bool, parseSpecial: Bool, model url: URL,
                             adapter: URL?, threads: Int?, chatFormat: ChatConvention? = nil,
                             baseWeights: BaseWeightStorage = .quantized) throws -> Score {
        if let threads { try BLAS.setThreads(threads) }
        // In f32 arithmetic, as `logits`: a one-token completion would otherwise be scored by a decode step.
        let base = try load(url, chatFormat: chatFormat, formatsPrompt: chat, baseWeights: baseWeights)
        let (model, tokenizer) = (base.model, base.tokenizer)
        let lora = try adapter.map { try base.adapter(at: $0).weights }
        // A formatted prompt carries the template's control tokens, which are matched as such; the prompt's own
        // text is tokenized as training tokenizes it.
        let promptIDs = chat
            ? tokenizer.encode(try base.formatter.chatText([.user(prompt)], addGenerationPrompt: true),
                               markers: parseSpecial ? .parsed : .text, addBOS: tokenizer.addBOS)
            : tokenizer.encode(prompt, parseSpecial: parseSpecial, addBOS: tokenizer.addBOS)
        let completionIDs = tokenizer.encode(completion, parseSpecial: parseSpecial)
        try requireContext(promptIDs.count + completionIDs.count, "the prompt and completion are", model)
        let logprobs = model.logProbabilities(of: completionIDs, after: promptIDs, lora: lora)
        // A non-finite logit makes its row's log-probability non-finite, so checking these checks the logits.
        try LlamaModel.requireFinite(logprobs)
        return Score(prompt: Tokens(ids: promptIDs, tokenizer: tokenizer), completion: Tokens(ids: completionIDs, tokenizer: tokenizer),
                     logprobs: logprobs)
    }

    /// The model for `logits` and `score`, every product in f32 arithmetic (no 8-bit activations), its matrices
    /// kept as `baseWeights` says. A prompt that is not formatted needs no chat format: a model without a
    /// template then reads as `plain`, the convention its adapters were trained under by default.
    static func load(_ url: URL, chatFormat: ChatConvention?, formatsPrompt: Bool, baseWeights: BaseWeightStorage) throws -> BaseModel {
        var chatFormat = chatFormat
        if chatFormat == nil, !formatsPrompt, try GGUFFile(url: url).string("tokenizer.chat_template") == nil {
            chatFormat = .plain
        }
        return try BaseModel.load(url, quantizedDecode: false, chatFormat: chatFormat, base: baseWeights)
    }

    /// Throws unless `count` tokens fit in the model's context (what `generate` checks for its prompt).
    static func requireContext(_ count: Int, _ what: String, _ model: LlamaModel) throws {
        let context = model.hyperparameters.contextLength
        guard count <= context else { throw ModelError.contextExceeded(what: what, tokens: count, contextLength: context) }
    }
}
