import AdaptCore
import Foundation
import Model
import Testing
@testable import Inference

private let baseDigest = Digest.sha256("toy base model")
private let vocabulary = ByteVocabulary()

/// A session on a fresh toy model, and the log of tokens that model evaluated.
private func toySession(seed: UInt64 = 1, catalog: ToyCatalog? = nil) -> (InferenceSession<ToyRecurrentModel>, Locked<[Int32]>) {
    let model = ToyRecurrentModel(vocabularySize: vocabulary.size, seed: seed)
    let log = model.evaluated
    let session = InferenceSession(backend: model, vocabulary: vocabulary, formatter: ToyChatFormatter(),
                                   baseModelDigest: baseDigest, catalog: catalog)
    return (session, log)
}

private func bundle(seed: UInt64, name: String = "a", base: Digest = baseDigest, convention: String = "toy-chatml",
                    lineage: String? = nil, version: Int? = nil) -> AdapterBundle<ToyRecurrentModel.Adapter> {
    AdapterBundle(weights: ToyRecurrentModel.randomAdapter(vocabularySize: vocabulary.size, rank: 4, seed: seed),
                  name: name, digest: Digest.sha256("adapter \(seed)"), baseModelDigest: base,
                  chatConvention: convention, lineage: lineage, version: version)
}

private func sampled(seed: UInt64, maxTokens: Int = 24) -> GenerationOptions {
    var o = GenerationOptions(maxTokens: maxTokens)
    o.sampling.seed = seed
    o.sampling.temperature = 1
    o.sampling.topK = 0
    return o
}

private let greedy = GenerationOptions(sampling: .greedy, maxTokens: 24)
private let question = Prompt.chat([ChatMessage.system("be brief"), ChatMessage.user("hello there")])

@Test func seededSamplingIsReproducibleAcrossSessionsAndSeedsDiffer() async throws {
    let (one, _) = toySession()
    let (two, _) = toySession()
    let a = try await one.generate(question, options: sampled(seed: 3))
    let b = try await two.generate(question, options: sampled(seed: 3))
    let again = try await one.generate(question, options: sampled(seed: 3))
    let other = try await one.generate(question, options: sampled(seed: 4))
    #expect(a.tokenIDs == b.tokenIDs)
    #expect(a.tokenIDs == again.tokenIDs)
    #expect(a.tokenIDs.count == 24)
    #expect(a.tokenIDs != other.tokenIDs)
}

@Test func streamedTextIsTheResultTextAndNeverSplitsACharacter() async throws {
    // Tokens 257… cut "é" and "🙂" in two; the script spells "aé🙂b" as a, [C3], [A9 F0 9F], [99 82 62].
    let e = Array("é".utf8), smile = Array("🙂".utf8)
    let vocab = ByteVocabulary(extra: [[e[0]], [e[1], smile[0], smile[1]], [smile[2], smile[3], UInt8(ascii: "b")]])
    let model = ScriptedModel(vocabularySize: vocab.size, script: [97, 257, 258, 259, ByteVocabulary.endOfText])
    model.startScript(afterPromptOf: 1)
    let session = InferenceSession(backend: model, vocabulary: vocab, formatter: ToyChatFormatter(),
                                   baseModelDigest: baseDigest)
    let chunks = Locked<[String]>([])
    let result = try await session.generate(.text("x"), options: greedy) { text in chunks.withLock { $0.append(text) } }
    let shown = chunks.withLock { $0 }
    #expect(shown == ["a", "é", "🙂b"])
    #expect(result.text == "aé🙂b")
    #expect(!result.text.contains("\u{FFFD}"))
    #expect(result.finishReason == .endOfGeneration)
    #expect(result.tokenIDs == [97, 257, 258, 259])
}

@Test func stopStringEndsGenerationAndIsTrimmed() async throws {
    let model = ScriptedModel(vocabularySize: vocabulary.size, script: "Hi!\nUser: more".utf8.map { Int32($0) })
    model.startScript(afterPromptOf: 1)
    let session = InferenceSession(backend: model, vocabulary: vocabulary, formatter: ToyChatFormatter(),
                                   baseModelDigest: baseDigest)
    var options = greedy
    options.stopStrings = ["\nUser:"]
    let result = try await session.generate(.text("x"), options: options)
    #expect(result.text == "Hi!")
    #expect(result.finishReason == .stopString)
    #expect(result.tokenIDs.count == "Hi!\nUser:".utf8.count)
}

@Test func maxTokensBoundsTheAnswer() async throws {
    let (session, _) = toySession()
    var options = greedy
    options.maxTokens = 5
    let result = try await session.generate(question, options: options)
    #expect(result.generatedTokens == 5)
    #expect(result.finishReason == .maxTokens)
    options.maxTokens = 0
    #expect(try await session.generate(question, options: options).generatedTokens == 0)
}

@Test func promptStartingLikeThePreviousOneIsProcessedOnlyFromWhereItDiffers() async throws {
    let (warm, model) = toySession()
    let first = try await warm.generate(question, options: greedy)
    #expect(first.cachedTokens == 0)
    let answer = first.text
    let longer = Prompt.chat([ChatMessage.system("be brief"), ChatMessage.user("hello there"),
                              ChatMessage.assistant(answer), ChatMessage.user("and then?")])
    let before = model.withLock { $0.count }
    let second = try await warm.generate(longer, options: greedy)
    let longerIDs = try await warm.tokens(for: longer)
    let firstIDs = try await warm.tokens(for: question)
    // Everything up to where the first answer starts is shared: system line, first question and more.
    #expect(second.cachedTokens >= firstIDs.count - 1)
    #expect(second.promptTokens == longerIDs.count)
    // The model ran the uncached suffix, then one token per generated token but the last.
    #expect(model.withLock { $0.count } - before == (longerIDs.count - second.cachedTokens) + second.generatedTokens - 1)

    let (cold, _) = toySession()
    let reference = try await cold.generate(longer, options: greedy)
    #expect(reference.cachedTokens == 0)
    #expect(second.tokenIDs == reference.tokenIDs)
}

@Test func identicalPromptRunsOnlyItsLastToken() async throws {
    let (session, model) = toySession()
    let first = try await session.generate(question, options: sampled(seed: 1))
    let before = model.withLock { $0.count }
    let second = try await session.generate(question, options: sampled(seed: 1))
    #expect(second.cachedTokens == second.promptTokens - 1)
    #expect(model.withLock { Array($0[before...].prefix(1)) } == [try await session.tokens(for: question).last!])
    #expect(first.tokenIDs == second.tokenIDs)
}

@Test func swappingAdapterChangesOutputAndSwappingBackRestoresItExactly() async throws {
    let (session, _) = toySession()
    let base = try await session.generate(question, options: greedy)
    try await session.attach(bundle(seed: 10, name: "first"))
    let adapted = try await session.generate(question, options: greedy)
    #expect(adapted.cachedTokens == 0, "swapping must invalidate the cache")
    #expect(adapted.tokenIDs != base.tokenIDs)
    try await session.swap(to: bundle(seed: 11, name: "second"))
    let other = try await session.generate(question, options: greedy)
    #expect(other.tokenIDs != adapted.tokenIDs)
    try await session.swap(to: bundle(seed: 10, name: "first"))
    #expect(try await session.generate(question, options: greedy).tokenIDs == adapted.tokenIDs)
    await session.detach()
    let back = try await session.generate(question, options: greedy)
    #expect(back.tokenIDs == base.tokenIDs)
    #expect(back.model == .base(reason: nil))
}

@Test func adapterForAnotherBaseModelOrConventionIsRefusedAndNothingChanges() async throws {
    let (session, _) = toySession()
    try await session.attach(bundle(seed: 10, name: "good"))
    await #expect(throws: InferenceError.adapterForAnotherModel(adapter: "wrong-model", expected: baseDigest,
                                                                actual: Digest.sha256("other"))) {
        try await session.attach(bundle(seed: 12, name: "wrong-model", base: Digest.sha256("other")))
    }
    await #expect(throws: InferenceError.adapterForAnotherConvention(adapter: "wrong-chat", expected: "toy-chatml",
                                                                     actual: "llama3")) {
        try await session.attach(bundle(seed: 12, name: "wrong-chat", convention: "llama3"))
    }
    let misfit = AdapterBundle(weights: ToyRecurrentModel.randomAdapter(vocabularySize: 10, rank: 4, seed: 1),
                               name: "misfit", digest: Digest.sha256("m"), baseModelDigest: baseDigest,
                               chatConvention: "toy-chatml")
    await #expect(throws: InferenceError.self) { try await session.attach(misfit) }
    guard case let .adapter(name, _, _, _) = await session.attached else { Issue.record("adapter lost"); return }
    #expect(name == "good")
}

@Test func lineageWithoutActiveVersionFallsBackToBaseAndReloadPicksUpPromotion() async throws {
    let catalog = ToyCatalog()
    let (session, _) = toySession(catalog: catalog)
    let state = try await session.attach(lineage: "mail")
    guard case let .base(reason) = state, let reason else { Issue.record("expected a fallback reason"); return }
    #expect(reason.contains("no active adapter"))
    let base = try await session.generate(question, options: greedy)
    #expect(base.model.isBase)

    catalog.setActive(bundle(seed: 20, lineage: "mail", version: 1), lineage: "mail")
    #expect(try await session.reload() == .adapter(name: "a", digest: Digest.sha256("adapter 20"), lineage: "mail", version: 1))
    let v1 = try await session.generate(question, options: greedy)
    #expect(v1.tokenIDs != base.tokenIDs)

    // Nothing changed: the cache survives a reload, and the adapter is not loaded again.
    let loads = catalog.loadCount
    try await session.reload()
    #expect(catalog.loadCount == loads)
    #expect(try await session.generate(question, options: greedy).cachedTokens > 0)

    catalog.setActive(nil, lineage: "mail")  // rolled back to nothing
    #expect(try await session.reload().isBase)
    #expect(try await session.generate(question, options: greedy).tokenIDs == base.tokenIDs)
}

@Test func reloadWithoutALineageIsAnError() async throws {
    let (session, _) = toySession(catalog: ToyCatalog())
    await #expect(throws: InferenceError.noLineageAttached) { try await session.reload() }
}

/// Runs `action` on its own thread once `signal` has been signalled three times: generation holds a
/// cooperative thread while it runs, so the stopper must not depend on the (possibly busy) task pool.
private func onOwnThread(after signal: DispatchSemaphore, _ action: @escaping @Sendable () -> Void) {
    Thread.detachNewThread {
        for _ in 0..<3 { signal.wait() }
        action()
    }
}

@Test func stopFromAnotherThreadEndsGenerationWithWhatWasProduced() async throws {
    // A model that would write "a" a million times: only stop() can end it early.
    let limit = 1_000_000
    let model = ScriptedModel(vocabularySize: vocabulary.size, script: Array(repeating: 97, count: limit))
    model.startScript(afterPromptOf: 2)
    let session = InferenceSession(backend: model, vocabulary: vocabulary, formatter: ToyChatFormatter(),
                                   baseModelDigest: baseDigest)
    let shown = DispatchSemaphore(value: 0)
    onOwnThread(after: shown) { session.stop() }
    var options = greedy
    options.maxTokens = limit
    let streamed = Locked("")
    let result = try await session.generate(.text("go"), options: options) { text in
        streamed.withLock { $0 += text }
        shown.signal()
    }
    #expect(result.finishReason == .stopped)
    #expect(result.generatedTokens >= 3 && result.generatedTokens < limit)
    #expect(result.text == streamed.withLock { $0 })
    #expect(result.text.utf8.count == result.generatedTokens)
}

@Test func statisticsCountPromptCachedAndGeneratedTokens() async throws {
    let (session, _) = toySession()
    let result = try await session.generate(question, options: greedy)
    #expect(result.promptTokens == (try await session.tokens(for: question)).count)
    #expect(result.generatedTokens == result.tokenIDs.count)
    #expect(result.promptMilliseconds >= 0 && result.generationMilliseconds > 0)
    #expect(result.tokensPerSecond > 0)
}

@Test func cachedDecodingEqualsFullRecomputationOnTheToyModel() async throws {
    let (session, _) = toySession(seed: 4)
    let prompt = try await session.tokens(for: question)
    let cached = try await session.generate(.tokens(prompt), options: greedy)
    let oracle = try greedyByFullRecomputation(ToyRecurrentModel(vocabularySize: vocabulary.size, seed: 4),
                                               prompt: prompt, maxTokens: 24, endTokens: vocabulary.endOfGenerationTokens)
    #expect(cached.tokenIDs == oracle)
}

@Test func generationEndsWhenTheContextIsFullAndALongerPromptIsRefused() async throws {
    let model = ScriptedModel(vocabularySize: vocabulary.size, script: Array(repeating: 97, count: 100), contextLength: 20)
    model.startScript(afterPromptOf: 10)
    let session = InferenceSession(backend: model, vocabulary: vocabulary, formatter: ToyChatFormatter(),
                                   baseModelDigest: baseDigest)
    var options = greedy
    options.maxTokens = 100
    let result = try await session.generate(.text("0123456789"), options: options)
    #expect(result.finishReason == .contextFull)
    #expect(result.generatedTokens == 10)
    await #expect(throws: InferenceError.promptTooLong(tokens: 20, contextLength: 20)) {
        try await session.generate(.text(String(repeating: "x", count: 20)), options: options)
    }
}

@Test func cancellingTheGeneratingTaskEndsItLikeStop() async throws {
    let limit = 1_000_000
    let model = ScriptedModel(vocabularySize: vocabulary.size, script: Array(repeating: 98, count: limit))
    model.startScript(afterPromptOf: 1)
    let session = InferenceSession(backend: model, vocabulary: vocabulary, formatter: ToyChatFormatter(),
                                   baseModelDigest: baseDigest)
    let shown = DispatchSemaphore(value: 0)
    var options = greedy
    options.maxTokens = limit
    let generation = Task { try await session.generate(.text("x"), options: options) { _ in shown.signal() } }
    onOwnThread(after: shown) { generation.cancel() }
    let result = try await generation.value
    #expect(result.finishReason == .stopped)
    #expect(result.generatedTokens < limit)
}
