import AdaptCore
import Foundation
import Model
import Testing
import TestSupport
@testable import Inference

/// SmolLM2-135M-Instruct, when `scripts/fetch-model` has fetched it; tests that need it are disabled otherwise.
enum SmolLM2 {
    static let url = CheckoutModel.url
    static let isPresent = CheckoutModel.isPresent
    static let absentReason: Comment = "the real model is absent; run scripts/fetch-model to fetch it"

    /// Loaded once for every test here (they are enabled only when the file is present).
    static let base: BaseModel = try! BaseModel.load(url)
}

/// `Fixtures/reference_generate.json`, written by `scripts/fixtures/reference_generate.py` from llama.cpp.
struct ReferenceGeneration: Decodable {
    struct Case: Decodable {
        let messages: [ChatMessage]
        let prompt: String
        let prompt_ids: [Int32]
        let token_ids: [Int32]
        let top2_gaps: [Double]
        let runners_up: [Int32]
        let end_gap: Double?
        let end_runner_up: Int32?
    }
    let max_tokens: Int
    let near_tie: Double
    let cases: [Case]

    static func load() throws -> ReferenceGeneration {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/reference_generate.json")
        return try JSON.decode(ReferenceGeneration.self, from: try Data(contentsOf: url), context: url.lastPathComponent)
    }
}

@Test(.enabled(if: SmolLM2.isPresent, SmolLM2.absentReason))
func realModelFormatsAndTokenizesChatsExactlyAsLlamaCpp() async throws {
    let base = SmolLM2.base
    let reference = try ReferenceGeneration.load()
    let session = base.session()
    for (n, item) in reference.cases.enumerated() {
        #expect(try base.formatter.render(item.messages, enableThinking: true).text == item.prompt, "case \(n)")
        #expect(try await session.tokens(for: .chat(item.messages)) == item.prompt_ids, "case \(n)")
    }
}

/// Our greedy answer equals llama.cpp's token for token up to the first place they differ, and that place
/// must be a near tie in llama.cpp (two best logits closer than `near_tie`) where we took its runner-up:
/// llama.cpp computes every product on 8-bit-quantized activations, and so do we (decoded tokens with
/// `QuantizedMatVec`, prompts with `QuantizedMatMul`, or in float32 with `ADAPT_PROMPT_KERNELS=sgemm`), but the
/// float sums run in other orders, so the two differ in the last bits of every logit and only a near tie may go
/// the other way. After it the two answers continue from different texts. With float32 decoding the answers
/// agreed for 30 tokens and more before the first near tie; with 8-bit decoding they part at the closest
/// ties (gaps under 0.1) of the first steps: 43 tokens agree with 8-bit prompts, one answer whole (measured;
/// 12 with float32 prompts, `ADAPT_PROMPT_KERNELS=sgemm`), and the count must stay
/// above 10.
@Test(.enabled(if: SmolLM2.isPresent, SmolLM2.absentReason))
func greedyGenerationOnTheRealModelMatchesLlamaCppUpToTheFirstNearTie() async throws {
    let base = SmolLM2.base
    let reference = try ReferenceGeneration.load()
    let ends = base.vocabulary.endOfGenerationTokens
    let session = base.session()
    var agreed = 0, identical = 0
    // The first six prompts keep this test to a few seconds in a release build; the batched test below
    // covers all of them.
    let cases = reference.cases.prefix(6)
    for (n, item) in cases.enumerated() {
        let ours = try await session.generate(.tokens(item.prompt_ids),
                                              options: GenerationOptions(sampling: .greedy, maxTokens: reference.max_tokens)).tokenIDs
        let theirs = item.token_ids
        let common = InferenceSession<LlamaBackend>.commonPrefix(ours, theirs)
        agreed += common
        print("case \(n): \(common) of \(theirs.count) tokens agree\(ours == theirs ? ", identical" : "")")
        if ours == theirs { identical += 1; continue }
        // The step where the answers part: llama.cpp's gap and runner-up there, and what we chose.
        let (gap, runnerUp): (Double?, Int32?) = common < theirs.count
            ? (item.top2_gaps[common], item.runners_up[common]) : (item.end_gap, item.end_runner_up)
        let choice: Int32? = common < ours.count ? ours[common] : nil  // nil: we ended the answer there
        #expect((gap ?? .infinity) < reference.near_tie, "case \(n) parts at step \(common) where llama.cpp was sure")
        if let choice, let runnerUp {
            #expect(choice == runnerUp, "case \(n) step \(common): we chose \(choice), llama.cpp's runner-up was \(runnerUp)")
        } else if let runnerUp {
            #expect(ends.contains(runnerUp), "case \(n) step \(common): we ended, llama.cpp's runner-up was \(runnerUp)")
        }
    }
    print("greedy vs llama.cpp: \(identical) of \(cases.count) answers identical, \(agreed) tokens agreed before any near tie")
    #expect(agreed >= 10)
}

/// Fed llama.cpp's own greedy answers (one batched pass per case), our model's argmax at every position must
/// be llama.cpp's token where that choice is clear, and one of its two best where it is a near tie;
/// likewise for the step where llama.cpp ended the answer.
@Test(.enabled(if: SmolLM2.isPresent, SmolLM2.absentReason))
func realModelAgreesWithLlamaCppAlongItsGreedyPath() throws {
    let base = SmolLM2.base
    let reference = try ReferenceGeneration.load()
    let ends = base.vocabulary.endOfGenerationTokens
    let V = base.model.hyperparameters.vocabularySize
    var clearSteps = 0
    for (n, item) in reference.cases.enumerated() {
        var cache = KVCache()
        let sequence = (item.prompt_ids + (item.end_gap == nil ? item.token_ids.dropLast() : item.token_ids[...])).map(Int.init)
        let logits = base.model.forwardAll(tokens: sequence, cache: &cache)  // (T, V)
        func ours(_ step: Int) -> Int32 {
            let row = item.prompt_ids.count - 1 + step
            return Sampler.argmax(Array(logits[(row * V)..<((row + 1) * V)]))
        }
        for step in item.token_ids.indices {
            if item.top2_gaps[step] >= reference.near_tie {
                clearSteps += 1
                #expect(ours(step) == item.token_ids[step], "case \(n) step \(step): llama.cpp's gap \(item.top2_gaps[step])")
            } else {
                // Where llama.cpp hesitated, so do we: its choice is within the near-tie margin of our best.
                let row = item.prompt_ids.count - 1 + step
                let best = logits[row * V + Int(ours(step))], theirs = logits[row * V + Int(item.token_ids[step])]
                #expect(Double(best - theirs) < reference.near_tie, "case \(n) step \(step): \(best) vs \(theirs)")
            }
        }
        if let gap = item.end_gap, let runnerUp = item.end_runner_up {
            let choice = ours(item.token_ids.count)
            #expect(ends.contains(choice) || (gap < reference.near_tie && choice == runnerUp), "case \(n): the end step")
        }
    }
    #expect(clearSteps >= 100)
}

@Test(.enabled(if: SmolLM2.isPresent, SmolLM2.absentReason))
func realModelReusesTheCachedPrefixOfALongerChat() async throws {
    let base = SmolLM2.base
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
