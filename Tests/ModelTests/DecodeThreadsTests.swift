import Foundation
@testable import Model
import Testing

/// Single-token decode spreads its products and its attention heads over the decode team; every row and every
/// head is computed whole by one member, so the thread count must not reach a single bit of the logits.
@Suite(.enabled(if: RealModel.isPresent, RealModel.absentReason)) struct DecodeThreadsTests {
    static let prompt = [1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47, 2, 198, 1, 520]

    /// The logits of `steps` greedy tokens decoded at `threads` threads on a cache the prompt filled at one
    /// thread (a batched pass's products do depend on OpenBLAS's thread count), as bit patterns.
    static func decodedLogits(_ model: LlamaModel, threads: Int, steps: Int = 12) -> [[UInt32]] {
        var cache = KVCache()
        var logits = BLAS.withThreadCount(1) { model.forward(tokens: prompt, cache: &cache) }
        var all: [[UInt32]] = []
        for _ in 0..<steps {
            let next = LlamaModel.top(1, of: logits)[0].id
            logits = BLAS.withThreadCount(threads) { model.forward(tokens: [next], cache: &cache) }
            all.append(logits.map(\.bitPattern))
        }
        return all
    }

    @Test func decodedLogitsAreTheSameBitsAtOneTwoAndThreeThreads() {
        let model = RealModel.model
        let one = Self.decodedLogits(model, threads: 1)
        #expect(Self.decodedLogits(model, threads: 2) == one, "at 2 threads")
        #expect(Self.decodedLogits(model, threads: 2) == one, "again at 2 threads")
        #expect(Self.decodedLogits(model, threads: 3) == one, "at 3 threads")
    }

    /// The requantized file mixes block types within a layer (q, k and v of different types), which the fused
    /// products read side by side (`scripts/test --peers` makes it).
    @Test(.enabled(if: RequantizedModelTests.filesArePresent, RequantizedModelTests.absentReason))
    func decodedLogitsOfTheRequantizedMixedTypeFileAreTheSameBitsAtOneAndTwoThreads() throws {
        let model = try LlamaModel(url: RequantizedModelTests.cache.appendingPathComponent("SmolLM2-135M-Instruct.Q4_K_M.gguf"))
        let one = Self.decodedLogits(model, threads: 1)
        #expect(Self.decodedLogits(model, threads: 2) == one, "at 2 threads")
    }
}
