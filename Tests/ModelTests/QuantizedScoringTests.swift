import AdaptCore
import Foundation
import Model
import Testing

/// Scoring with the base kept quantized (the default of `adapt score`) against the f32 copy, on the default
/// model. The two read the same weights and round no activation: every block's product is the same sgemm on
/// the same values, and only the output projection, multiplied in tiles of 3840 vocabulary rows, can differ in
/// the last bits of some logits (`BaseMatrix.outputTileRows`), carried into each log-probability through
/// the softmax. Measured on 160 tokens: no difference under OpenBLAS's SkylakeX kernels, 1.9e-6 under its
/// Haswell ones (those adapt pins); the bound, 1e-4, is fifty times that. A wrong tile (rows of W read for
/// others) moves the log-probabilities by whole units.
struct QuantizedScoringTests {
    static let quantized: LlamaModel? = RealModel.isPresent ? try? LlamaModel(url: RealModel.path, quantizedDecode: false, base: .quantized) : nil

    static func tokens(_ count: Int, seed: UInt64) -> [Int] {
        let rng = CounterRNG(seed: seed)
        return (0..<count).map { Int(rng.block(.test, step: 0, index: UInt32($0)).0 % 49152) }
    }

    @Test(.enabled(if: RealModel.isPresent, RealModel.absentReason))
    func scoringOnTheQuantizedBaseAgreesWithTheF32BaseUpToTheOutputTilesLastBits() throws {
        let quantized = try #require(Self.quantized)
        let f32 = try LlamaModel(url: RealModel.path, quantizedDecode: false)
        let all = Self.tokens(160, seed: 11)
        let (prompt, completion) = (Array(all.prefix(40)), Array(all.dropFirst(40)))
        let a = f32.logProbabilities(of: completion, after: prompt)
        let b = quantized.logProbabilities(of: completion, after: prompt)
        #expect(a.count == completion.count && b.count == a.count)
        let worst = zip(a, b).map { abs($0 - $1) }.max()!
        print("quantized against f32 scoring: largest log-probability difference \(worst)")
        #expect(worst <= 1e-4)
    }

    /// OpenBLAS's products repeat their bits at a given thread count, and so does the dequantization (each row
    /// written on its own): the scores repeat bit for bit at 1 and at 2 threads.
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
