import Model

/// What generation needs from a causal language model: run new tokens through it after the ones it holds in
/// its key/value cache, and forget the cache back to a prefix.
///
/// The session is the only owner of a backend (it lives inside the session's actor), so a backend may keep
/// mutable buffers without locks. `LlamaModel` conforms through `LlamaBackend`; tests use small models.
public protocol LanguageModelBackend: AnyObject {
    /// The LoRA weights this model applies on top of its base weights.
    associatedtype Adapter

    var vocabularySize: Int { get }
    /// The most positions the cache can hold.
    var contextLength: Int { get }
    /// How many positions the cache holds now; the next token evaluated sits at this position.
    var cachedTokenCount: Int { get }

    /// Drops cached positions from `count` on (0 empties the cache).
    func truncateCache(to count: Int)

    /// Runs `tokens` at positions `cachedTokenCount…`, appends them to the cache and returns the logits `(V)`
    /// of the last one. All tokens are processed as one batch: that is prompt processing.
    func evaluate(_ tokens: [Int32], adapter: Adapter?) throws -> [Float]

    /// Throws `InferenceError.adapterShapeMismatch` when `adapter` cannot be applied to this model.
    func validate(_ adapter: Adapter, name: String) throws
}

/// What generation needs from a tokenizer.
public protocol GenerationVocabulary: Sendable {
    /// The ids of `text`, special tokens such as `<|im_end|>` parsed (the text is a raw prompt given as is).
    func encode(_ text: String) -> [Int32]
    /// The ids of a rendered conversation: special tokens only where the template wrote them, every message's
    /// text as text (DESIGN.md, "Privacy": text from data is always tokenised as text).
    func encode(_ chat: ChatText) -> [Int32]
    /// The raw bytes a token stands for; may end inside a multi-byte UTF-8 character.
    func bytes(of token: Int32) -> [UInt8]
    /// Tokens that end a generation (end of text, end of turn); never shown.
    var endOfGenerationTokens: Set<Int32> { get }
}

/// Renders a conversation into the prompt text a model was trained on (`ChatFormatter` in the application).
public protocol PromptFormatter: Sendable {
    /// The convention's name as adapters record it (e.g. `chatml`): an adapter trained under another one is
    /// refused.
    var conventionName: String { get }
    /// The prompt text for `messages`, ending where the assistant's answer starts, knowing which of it the
    /// template wrote.
    func render(_ messages: [ChatMessage], enableThinking: Bool) throws -> ChatText
}
