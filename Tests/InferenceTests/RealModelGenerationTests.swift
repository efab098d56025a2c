import AdaptCore
import Foundation
import Model
import Testing
@testable import Inference

/// SmolLM2-135M-Instruct, when `scripts/fetch-model` has fetched it; tests that need it skip otherwise.
enum SmolLM2 {
    static let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("state/models/SmolLM2-135M-Instruct.Q4_1.gguf")

    /// Loaded once for every test here; nil (after saying why) when the file is absent.
    static let base: BaseModel? = {
        guard FileManager.default.fileExists(atPath: url.path) else {
            print("skipped: \(url.lastPathComponent) is absent; run scripts/fetch-model to fetch it")
            return nil
        }
        return try! BaseModel.load(url)
    }()
}

/// `Fixtures/reference_generate.json`, written by `scripts/fixtures/reference_generate.py` from llama.cpp.
struct ReferenceGeneration: Decodable {
    struct Case: Decodable {
        let messages: [ChatMessage]
        let prompt: String
        let prompt_ids: [Int32]
        let token_ids: [Int32]
        let top2_gaps: [Double]
    }
    let max_tokens: Int
    let cases: [Case]

    static func load() throws -> ReferenceGeneration {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/reference_generate.json")
        return try JSON.decode(ReferenceGeneration.self, from: try Data(contentsOf: url), context: url.lastPathComponent)
    }
}

@Test func greedyGenerationOnTheRealModelMatchesLlamaCpp() async throws {
    guard let base = SmolLM2.base else { return }
    let reference = try ReferenceGeneration.load()
    #expect(reference.cases.count >= 3)
    let session = base.session()
    for (n, item) in reference.cases.enumerated() {
        // Same chat text and ids as llama.cpp's template render and tokenizer, then the same greedy answer.
        #expect(try base.formatter.render(item.messages, enableThinking: true) == item.prompt, "case \(n)")
        #expect(try await session.tokens(for: .chat(item.messages)) == item.prompt_ids, "case \(n)")
        let result = try await session.generate(.tokens(item.prompt_ids),
                                                options: GenerationOptions(sampling: .greedy, maxTokens: reference.max_tokens))
        #expect(result.tokenIDs == item.token_ids, "case \(n): smallest top-2 gap in llama.cpp was \(item.top2_gaps.min() ?? 0)")
    }
}

@Test func realModelReusesTheCachedPrefixOfALongerChat() async throws {
    guard let base = SmolLM2.base else { return }
    let session = base.session()
    let options = GenerationOptions(sampling: .greedy, maxTokens: 8)
    let first: [ChatMessage] = [.user("Name a fruit.")]
    let answer = try await session.generate(.chat(first), options: options)
    let longer = first + [.assistant(answer.text), .user("And a vegetable?")]
    let warm = try await session.generate(.chat(longer), options: options)
    let firstIDs = try await session.tokens(for: .chat(first))
    #expect(warm.cachedTokens >= firstIDs.count)
    await session.clearCache()
    let cold = try await session.generate(.chat(longer), options: options)
    #expect(cold.cachedTokens == 0)
    #expect(warm.tokenIDs == cold.tokenIDs)
}
