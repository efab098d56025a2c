import Foundation
import AdaptCore
import Inference
import Model

/// A tiny recurrent language model with seeded random weights: h_t = tanh(W·h_{t−1} + E[x_t]), logits = (U + B·A)·h_t.
///
/// Its "cache" is the hidden state after each position, so truncating and extending it behave like a
/// transformer's key/value cache: the logits after a prefix depend on every token of it. An adapter adds a
/// low-rank B·A (V×r · r×H) to the output matrix, like LoRA.
final class ToyRecurrentModel: LanguageModelBackend {
    struct Adapter {
        let a: [Float]  // (r, H)
        let b: [Float]  // (V, r)
        let rank: Int
    }

    let vocabularySize: Int
    let hidden = 16
    let contextLength: Int
    private let embedding: [Float]  // (V, H)
    private let recurrent: [Float]  // (H, H)
    private let output: [Float]  // (V, H)
    private var states: [[Float]] = []  // (T, H)
    /// Every token run through the model, in order (what prompt processing actually cost); shared with the
    /// test, which reads it between session calls.
    let evaluated = Locked<[Int32]>([])

    var cachedTokenCount: Int { states.count }

    init(vocabularySize: Int, contextLength: Int = 4096, seed: UInt64 = 1) {
        self.vocabularySize = vocabularySize
        self.contextLength = contextLength
        let rng = CounterRNG(seed: seed)
        let h = hidden
        embedding = (0..<vocabularySize * h).map { Float(rng.normal(.test, step: 1, index: UInt32($0))) }
        recurrent = (0..<h * h).map { Float(rng.normal(.test, step: 2, index: UInt32($0))) * 0.5 / Float(h).squareRoot() }
        output = (0..<vocabularySize * h).map { Float(rng.normal(.test, step: 3, index: UInt32($0))) * 2 }
    }

    static func randomAdapter(vocabularySize: Int, rank: Int, seed: UInt64) -> Adapter {
        let rng = CounterRNG(seed: seed)
        return Adapter(a: (0..<rank * 16).map { Float(rng.normal(.test, step: 4, index: UInt32($0))) },
                       b: (0..<vocabularySize * rank).map { Float(rng.normal(.test, step: 5, index: UInt32($0))) },
                       rank: rank)
    }

    func truncateCache(to count: Int) { states.removeSubrange(min(count, states.count)...) }

    func evaluate(_ tokens: [Int32], adapter: Adapter?) throws -> [Float] {
        precondition(!tokens.isEmpty)
        evaluated.withLock { $0 += tokens }
        for token in tokens {
            let previous = states.last ?? [Float](repeating: 0, count: hidden)
            var next = [Float](repeating: 0, count: hidden)
            for i in 0..<hidden {
                var sum = embedding[Int(token) * hidden + i]
                for j in 0..<hidden { sum += recurrent[i * hidden + j] * previous[j] }
                next[i] = tanh(sum)
            }
            states.append(next)
        }
        let h = states.last!
        var projected = [Float](repeating: 0, count: adapter?.rank ?? 0)  // (r)
        if let adapter {
            for r in 0..<adapter.rank { for j in 0..<hidden { projected[r] += adapter.a[r * hidden + j] * h[j] } }
        }
        return (0..<vocabularySize).map { v in
            var sum: Float = 0
            for j in 0..<hidden { sum += output[v * hidden + j] * h[j] }
            if let adapter { for r in 0..<adapter.rank { sum += adapter.b[v * adapter.rank + r] * projected[r] } }
            return sum
        }
    }

    func validate(_ adapter: Adapter, name: String) throws {
        guard adapter.b.count == vocabularySize * adapter.rank, adapter.a.count == adapter.rank * hidden else {
            throw InferenceError.adapterShapeMismatch(adapter: name, reason: "expected (\(vocabularySize), r) and (r, \(hidden))")
        }
    }
}

/// A model that, whatever it was given, puts almost all probability on the next token of a script: the
/// script's first token at the first generated position, and so on. For tests of what happens to text.
final class ScriptedModel: LanguageModelBackend {
    typealias Adapter = Never
    let vocabularySize: Int
    let contextLength: Int
    let script: [Int32]
    private var promptLength = 0
    private(set) var cachedTokenCount = 0

    init(vocabularySize: Int, script: [Int32], contextLength: Int = 1 << 20) {
        self.vocabularySize = vocabularySize
        self.script = script
        self.contextLength = contextLength
    }

    /// Where the script starts: the position right after a prompt of this length.
    func startScript(afterPromptOf length: Int) { promptLength = length }

    func truncateCache(to count: Int) { cachedTokenCount = min(count, cachedTokenCount) }

    func evaluate(_ tokens: [Int32], adapter: Never?) throws -> [Float] {
        cachedTokenCount += tokens.count
        var logits = [Float](repeating: 0, count: vocabularySize)
        let index = cachedTokenCount - promptLength
        if index >= 0, index < script.count { logits[Int(script[index])] = 30 }
        return logits
    }

    func validate(_ adapter: Never, name: String) throws {}
}

/// Byte-level vocabulary: token b < 256 is the byte b; then one end-of-text token; then tokens that are
/// fragments of multi-byte characters glued to ASCII, so characters are split across token boundaries.
struct ByteVocabulary: GenerationVocabulary {
    static let endOfText: Int32 = 256
    let extra: [[UInt8]]

    init(extra: [[UInt8]] = []) { self.extra = extra }

    var size: Int { 257 + extra.count }

    func encode(_ text: String) -> [Int32] { text.utf8.map { Int32($0) } }

    /// No byte is a special token here, so the template's text and a message's encode alike.
    func encode(_ chat: ChatText) -> [Int32] { encode(chat.text) }

    func bytes(of token: Int32) -> [UInt8] {
        if token < 256 { return [UInt8(token)] }
        if token == Self.endOfText { return [] }
        return extra[Int(token) - 257]
    }

    var endOfGenerationTokens: Set<Int32> { [Self.endOfText] }
}

/// A ChatML-like formatter, enough to make chat prompts that share prefixes.
struct ToyChatFormatter: PromptFormatter {
    var conventionName = "toy-chatml"

    func render(_ messages: [ChatMessage], enableThinking: Bool) -> ChatText {
        var text = ChatText()
        for message in messages {
            text.appendTemplate("<\(message.role)>")
            text.appendData(message.content)
            text.appendTemplate("</>")
        }
        text.appendTemplate("<assistant>")
        return text
    }
}

/// A catalog whose active versions the test sets.
final class ToyCatalog: AdapterCatalog, @unchecked Sendable {
    // Tests mutate it only between session calls, never concurrently; the lock makes that explicit.
    private let box = Locked<[String: AdapterBundle<ToyRecurrentModel.Adapter>]>([:])

    func setActive(_ bundle: AdapterBundle<ToyRecurrentModel.Adapter>?, lineage: String) {
        box.withLock { $0[lineage] = bundle }
    }

    private let loads = Locked(0)

    /// How many times a session asked for a whole adapter (what reading its file would cost).
    var loadCount: Int { loads.withLock { $0 } }

    func activeAdapter(lineage: String) throws -> AdapterBundle<ToyRecurrentModel.Adapter>? {
        loads.withLock { $0 += 1 }
        return box.withLock { $0[lineage] }
    }

    func activeDigest(lineage: String) throws -> Digest? {
        box.withLock { $0[lineage]?.digest }
    }
}
