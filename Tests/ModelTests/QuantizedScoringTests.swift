import AdaptCore
import Foundation
import Model
import Testing

/// Scoring with the base kept quantized (the default of `adapt score`) against the f32 copy, on the default
/// model. The two read the same weights and round no activation; they differ only where the tiled products
/// (`QuantizedTileProduct`) sum in another order than one sgemm over the whole matrix: each product within
/// γₖ·Σ|w·x| (QuantizedTileProductTests), a few units in the last place of logits up to about 30 (an ulp there
/// is 1.9e-6), carried into each log-probability through the softmax. Measured on 160 tokens: 1.7e-5 under
/// OpenBLAS's Haswell kernels (the ones adapt pins), no difference under SkylakeX's. The bound, 5e-4, is
/// thirty times that; a wrong tile (rows of W read for others) moves the log-probabilities by whole units.
struct QuantizedScoringTests {
    static let quantized: LlamaModel? = RealModel.isPresent ? try? LlamaModel(url: RealModel.path, quantizedDecode: false, base: .quantized) : nil

    static func tokens(_ count: Int, seed: UInt64) -> [Int] {
        let rng = CounterRNG(seed: seed)
        return (0..<count).map { Int(rng.block(.test, step: 0, index: UInt32($0)).0 % 49152) }
    }

    @Test(.enabled(if: RealModel.isPresent, RealModel.absentReason))
    func scoringOnTheQuantizedBaseAgreesWithTheF32BaseWithinTheSummationOrder() throws {
        let quantized = try #require(Self.quantized)
        let f32 = try LlamaModel(url: RealModel.path, quantizedDecode: false)
        let all = Self.tokens(160, seed: 11)
        let (prompt, completion) = (Array(all.prefix(40)), Array(all.dropFirst(40)))
        let a = f32.logProbabilities(of: completion, after: prompt)
        let b = quantized.logProbabilities(of: completion, after: prompt)
        #expect(a.count == completion.count && b.count == a.count)
        let worst = zip(a, b).map { abs($0 - $1) }.max()!
        print("quantized against f32 scoring: largest log-probability difference \(worst)")
        #expect(worst <= 5e-4)
    }

    /// The tiled products give the same bits at any thread count, the rest of the pass (attention, OpenBLAS's
    /// own threads) at a given one: the scores repeat bit for bit at 1 and at 2 threads.
    @Test(.enabled(if: RealModel.isPresent, RealModel.absentReason))
    func scoringOnTheQuantizedBaseRepeatsBitForBitAtOneAndTwoThreads() throws {
        let quantized = try #require(Self.quantized)
        let all = Self.tokens(96, seed: 12)
        let (prompt, completion) = (Array(all.prefix(30)), Array(all.dropFirst(30)))
        for threads in [1, 2] {
            let first = BLAS.withThreadCount(threads) { quantized.logProbabilities(of: completion, after: prompt) }
            let again = BLAS.withThreadCount(threads) { quantized.logProbabilities(of: completion, after: prompt) }
            #expect(first.map(\.bitPattern) == again.map(\.bitPattern), "at \(threads) threads")
        }
    }
}
