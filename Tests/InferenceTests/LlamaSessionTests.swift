import AdaptCore
import Foundation
import Model
import Testing
import TestSupport
@testable import Inference

/// The tiny random llama model as a session backend, and a vocabulary read off its GGUF token list.
enum TinyLlama {
    static let directory = TemporaryDirectory("inference-tiny")
    static let url: URL = {
        let url = directory.file("tiny.gguf")
        try! TinyModel(seed: 7).write(to: url)
        return url
    }()
    static let model = try! LlamaModel(url: url)
    static let digest = try! Digest.sha256(fileAt: url)

    static func session(catalog: (any AdapterCatalog<LoRAParameters>)? = nil) -> InferenceSession<LlamaBackend> {
        InferenceSession(backend: LlamaBackend(model: model), vocabulary: TinyVocabulary(),
                         formatter: ToyChatFormatter(conventionName: "chatml"), baseModelDigest: digest, catalog: catalog)
    }

    /// A LoRA adapter with random A and B (a fresh one has B = 0 and changes nothing).
    static func adapter(seed: UInt64, rank: Int = 8, scale: Float = 0.5) -> LoRAParameters {
        var lora = LoRAParameters.initialized(for: model, config: LoRAConfig(rank: rank, alpha: Float(2 * rank)), seed: seed)
        let rng = CounterRNG(seed: seed)
        for (i, name) in lora.names.enumerated() where name.hasSuffix("lora_b") {
            lora.values[i] = lora.values[i].indices.map { Float(rng.normal(.test, step: UInt64(i), index: UInt32($0))) * scale }
        }
        return lora
    }

    static func bundle(seed: UInt64, rank: Int = 8, name: String = "tiny-adapter") -> AdapterBundle<LoRAParameters> {
        AdapterBundle(weights: adapter(seed: seed, rank: rank), name: name, digest: Digest.sha256("tiny adapter \(seed) \(rank)"),
                      baseModelDigest: digest, chatConvention: "chatml")
    }
}

/// Bytes of the tiny model's tokens: byte symbols mapped back through GPT-2's table, special tokens literally.
struct TinyVocabulary: GenerationVocabulary {
    let pieces: [[UInt8]]
    init() {
        var byteOf: [Character: UInt8] = [:]
        let printable = Array(33...126) + Array(161...172) + Array(174...255)
        let order = printable + (0..<256).filter { !printable.contains($0) }
        for (symbol, byte) in zip(TinyModel.byteSymbols, order) { byteOf[Character(symbol)] = UInt8(byte) }
        pieces = TinyModel.vocabulary.tokens.enumerated().map { id, text in
            id < TinyModel.specialTokens.count ? Array(text.utf8) : text.map { byteOf[$0]! }
        }
    }
    /// One token per byte: enough for prompts in tests, which mostly pass ids.
    func encode(_ text: String) -> [Int32] {
        text.utf8.map { byte in Int32(pieces.firstIndex(of: [byte])!) }
    }
    func encode(_ chat: ChatText) -> [Int32] { encode(chat.text) }
    func bytes(of token: Int32) -> [UInt8] { pieces[Int(token)] }
    var endOfGenerationTokens: Set<Int32> { [0, 2] }
}

private let prompt: [Int32] = [1, 40, 300, 7, 99, 150, 3, 250, 61, 17, 88]
private let greedy = GenerationOptions(sampling: .greedy, maxTokens: 20)

@Test func cachedDecodingOnTheTinyLlamaEqualsFullRecomputation() async throws {
    let session = TinyLlama.session()
    let cached = try await session.generate(.tokens(prompt), options: greedy)
    let oracle = try greedyByFullRecomputation(LlamaBackend(model: TinyLlama.model), prompt: prompt, maxTokens: 20,
                                               endTokens: TinyVocabulary().endOfGenerationTokens)
    #expect(cached.tokenIDs == oracle)
    #expect(cached.generatedTokens > 0)
}

@Test func prefixReuseOnTheTinyLlamaRunsOnlyTheSuffixAndMatchesAColdSession() async throws {
    let warm = TinyLlama.session()
    let first = try await warm.generate(.tokens(prompt), options: greedy)
    let longer = prompt + first.tokenIDs + [2, 1, 77, 5, 301]
    let second = try await warm.generate(.tokens(longer), options: greedy)
    #expect(second.cachedTokens == prompt.count + first.tokenIDs.count - 1)
    let cold = try await TinyLlama.session().generate(.tokens(longer), options: greedy)
    #expect(cold.cachedTokens == 0)
    #expect(second.tokenIDs == cold.tokenIDs)
}

@Test func hotSwapOnTheTinyLlamaChangesOutputAndSwappingBackRestoresItExactly() async throws {
    let session = TinyLlama.session()
    let base = try await session.generate(.tokens(prompt), options: greedy)
    try await session.attach(TinyLlama.bundle(seed: 1))
    let one = try await session.generate(.tokens(prompt), options: greedy)
    try await session.swap(to: TinyLlama.bundle(seed: 2))
    let two = try await session.generate(.tokens(prompt), options: greedy)
    try await session.swap(to: TinyLlama.bundle(seed: 1))
    let oneAgain = try await session.generate(.tokens(prompt), options: greedy)
    await session.detach()
    let baseAgain = try await session.generate(.tokens(prompt), options: greedy)
    #expect(one.tokenIDs != base.tokenIDs)
    #expect(two.tokenIDs != one.tokenIDs)
    #expect(oneAgain.tokenIDs == one.tokenIDs)
    #expect(baseAgain.tokenIDs == base.tokenIDs)
}

@Test func adapterThatDoesNotFitTheTinyLlamaIsRefused() async throws {
    let session = TinyLlama.session()
    var wrong = TinyLlama.adapter(seed: 1)
    wrong.shapes[0] = [wrong.shapes[0][0], wrong.shapes[0][1] + 1]
    let bundle = AdapterBundle(weights: wrong, name: "wrong", digest: Digest.sha256("w"),
                               baseModelDigest: TinyLlama.digest, chatConvention: "chatml")
    await #expect(throws: InferenceError.self) { try await session.attach(bundle) }
    #expect(await session.attached == .base(reason: nil))
}
