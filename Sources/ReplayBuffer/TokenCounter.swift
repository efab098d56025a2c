/// Counts the tokens of a text for the privacy budget (`max_tokens_per_night`).
///
/// The replay buffer does not link the model; the tokenizer plugs in here (e.g. an adapter over the model's
/// BPE tokenizer) and `ReplayStore.recountTokens` replaces stored estimates with exact counts.
public protocol TokenCounter: Sendable {
    /// True when counts are the model's own tokenization rather than an estimate.
    var isExact: Bool { get }
    func count(_ text: String) -> Int
}

extension TokenCounter {
    /// Tokens of one example: system, prompt and completion counted separately and added.
    public func count(system: String?, prompt: String, completion: String) -> Int {
        (system.map(count) ?? 0) + count(prompt) + count(completion)
    }

    /// Tokens of a conversation: every turn counted separately and added (for a single exchange, the same as
    /// `count(system:prompt:completion:)`).
    public func count(turns: [Turn]) -> Int {
        turns.reduce(0) { $0 + count($1.content) }
    }
}

/// An estimate: one token per four UTF-8 bytes, rounded up (byte-level BPE vocabularies of ~50k entries
/// average about four bytes of English per token). Not exact; stored with `token_count_exact = 0`.
public struct ByteEstimateTokenCounter: TokenCounter {
    public init() {}
    public var isExact: Bool { false }
    public func count(_ text: String) -> Int { (text.utf8.count + 3) / 4 }
}
