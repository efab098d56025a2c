import AdaptCore
import Foundation
import Model
import Testing

struct LoRATests {
    static let batch = [
        TrainingSequence(tokens: [1, 40, 300, 7, 99, 150, 3, 250, 61, 2], weights: [0, 0, 0, 1, 1, 1, 1, 0.5, 1]),
        TrainingSequence(tokens: [1, 17, 88, 120, 5, 260], weights: [0, 0, 2, 1, 1]),
    ]

    /// An adapter on every projection with random, non-zero B (a fresh B is zero, which hides A's gradient).
    static func adapter(dropout: Float = 0, seed: UInt64 = 11) -> LoRAParameters {
        var lora = LoRAParameters.initialized(for: Tiny.model, config: LoRAConfig(rank: 4, alpha: 8, dropout: dropout, targets: Projection.allCases), seed: seed)
        let rng = CounterRNG(seed: seed)
        for i in lora.names.indices where lora.names[i].hasSuffix("lora_b") {
            lora.values[i] = lora.values[i].indices.map { Float(rng.normal(.test, step: UInt64(i), index: UInt32($0))) * 0.2 }
        }
        return lora
    }

    @Test func aFreshAdapterLeavesTheLogitsBitIdentical() {
        let lora = LoRAParameters.initialized(for: Tiny.model, config: LoRAConfig(rank: 8, alpha: 16, dropout: 0.1, targets: Projection.allCases), seed: 5)
        var c1 = KVCache(), c2 = KVCache()
        #expect(Tiny.model.forwardAll(tokens: Tiny.tokens, lora: lora, cache: &c1) == Tiny.model.forwardAll(tokens: Tiny.tokens, cache: &c2))
        #expect(c1 == c2)
    }

    @Test func initializationFollowsTheLayoutAndPEFTsBound() {
        let h = Tiny.model.hyperparameters
        let lora = LoRAParameters.initialized(for: h, config: LoRAConfig(rank: 8, alpha: 16, dropout: 0, targets: [.q, .down]), seed: 5)
        #expect(lora.names == ["blk.0.q.lora_a", "blk.0.q.lora_b", "blk.0.down.lora_a", "blk.0.down.lora_b",
                               "blk.1.q.lora_a", "blk.1.q.lora_b", "blk.1.down.lora_a", "blk.1.down.lora_b"])
        #expect(lora.shapes[0] == [8, h.width] && lora.shapes[1] == [h.queryWidth, 8])
        #expect(lora.shapes[2] == [8, h.ffnWidth] && lora.shapes[3] == [h.width, 8])
        #expect(lora.values[0].allSatisfy { abs($0) <= 1 / Float(h.width).squareRoot() })
        #expect(lora.values[2].allSatisfy { abs($0) <= 1 / Float(h.ffnWidth).squareRoot() })
        #expect(lora.values[1].allSatisfy { $0 == 0 })
        #expect(lora == LoRAParameters.initialized(for: h, config: lora.config, seed: 5))
        #expect(lora != LoRAParameters.initialized(for: h, config: lora.config, seed: 6))
    }

    @Test func theAdaptedFastForwardAgreesWithTheNaiveReference() {
        let lora = Self.adapter()
        var cache = KVCache()
        let fast = Tiny.model.forwardAll(tokens: Tiny.tokens, lora: lora, cache: &cache)
        let naive = Tiny.model.referenceForward(tokens: Tiny.tokens, lora: lora)
        var base = KVCache()
        #expect(maxAbsDifference(fast, Tiny.model.forwardAll(tokens: Tiny.tokens, cache: &base)) > 1e-2)   // the adapter matters
        #expect(maxAbsDifference(fast, naive) <= 1e-5 * naive.map(abs).max()!)
    }

    /// Against logits from the inference pass (whole-width attention, no team): also checks the training
    /// pass's blocked causal attention (the long sequence has three blocks) on a team of one and of two.
    @Test(arguments: [(false, 1), (true, 1), (true, 2)])
    func theLossIsTheWeightedMeanCrossEntropyOfTheTargets(long: Bool, threads: Int) throws {
        let lora = Self.adapter()
        let batch = long ? Self.longBatch + Self.batch : Self.batch
        let result = try Tiny.model.lossAndGradients(batch, lora: lora, dropoutSeed: 1, step: 0, threads: threads)
        let V = Tiny.model.hyperparameters.vocabularySize
        var expected = 0.0, weights = 0.0
        for sequence in batch {
            var cache = KVCache()
            let logits = Tiny.model.forwardAll(tokens: sequence.tokens, lora: lora, cache: &cache)
            for (t, w) in sequence.weights.enumerated() where w != 0 {
                let row = logits[(t * V)..<((t + 1) * V)].map(Double.init)
                let m = row.max()!
                let logZ = m + log(row.reduce(0) { $0 + exp($1 - m) })
                expected += Double(w) * (logZ - row[sequence.tokens[t + 1]])
                weights += Double(w)
            }
        }
        #expect(result.weightSum == weights)
        #expect(abs(result.loss - expected / weights) <= 1e-5)
    }

    /// One sequence of 150 tokens: three causal attention blocks of 64 rows, products large enough for a team
    /// to split, and a prompt of 20 unweighted positions.
    static let longBatch: [TrainingSequence] = {
        let tokens = (0..<150).map { (7 * $0 * $0 + 3 * $0 + 1) % 290 + 3 }
        return [TrainingSequence(tokens: tokens, weights: (0..<149).map { $0 < 20 ? 0 : 1 })]
    }()

    /// Directional derivatives along random directions, tensor by tensor, against central finite differences
    /// of the loss (ε = 1e-3; the loss is computed in f32, so differences carry about 2e-4 of noise): within
    /// 0.5% relative plus 5e-4 absolute (measured: about 1e-4 relative on directional derivatives of order 1).
    /// With dropout, the masks are fixed by (seed, step), so the loss is a smooth function of the adapter.
    func checkAgainstFiniteDifferences(_ batch: [TrainingSequence], dropout: Float, threads: Int) throws {
        let lora = Self.adapter(dropout: dropout)
        let analytic = try Tiny.model.lossAndGradients(batch, lora: lora, dropoutSeed: 3, step: 9, threads: threads).gradients
        let rng = CounterRNG(seed: 99)
        let epsilon: Float = 1e-3
        var worst = 0.0
        for tensor in lora.names.indices {
            let direction = lora.values[tensor].indices.map { Float(rng.normal(.test, step: UInt64(tensor), index: UInt32($0))) }
            var plus = lora, minus = lora
            for i in direction.indices {
                plus.values[tensor][i] += epsilon * direction[i]
                minus.values[tensor][i] -= epsilon * direction[i]
            }
            let lPlus = try Tiny.model.lossAndGradients(batch, lora: plus, dropoutSeed: 3, step: 9, threads: threads).loss
            let lMinus = try Tiny.model.lossAndGradients(batch, lora: minus, dropoutSeed: 3, step: 9, threads: threads).loss
            let numeric = (lPlus - lMinus) / (2 * Double(epsilon))
            let exact = zip(analytic[tensor], direction).reduce(0.0) { $0 + Double($1.0) * Double($1.1) }
            let error = abs(numeric - exact)
            worst = max(worst, error / max(abs(exact), 1e-1))
            #expect(error <= 5e-3 * abs(exact) + 5e-4, "\(lora.names[tensor]): analytic \(exact), numeric \(numeric)")
        }
        print("gradient check (\(batch.count) sequences, dropout \(dropout), \(threads) threads): worst relative error \(worst)")
    }

    @Test(arguments: [Float(0), 0.2])
    func gradientsAgreeWithFiniteDifferences(dropout: Float) throws {
        try checkAgainstFiniteDifferences(Self.batch, dropout: dropout, threads: 1)
    }

    /// The blocked causal attention (masked keys skipped, the key side summed per key block) and a team of two.
    @Test(arguments: [(Float(0), 1), (0.2, 2)])
    func gradientsOfALongSequenceAgreeWithFiniteDifferences(dropout: Float, threads: Int) throws {
        try checkAgainstFiniteDifferences(Self.longBatch, dropout: dropout, threads: threads)
    }

    /// Same inputs and team size give the same bits; another team size only moves the last bits of the products.
    @Test func aTeamOfTwoRepeatsBitForBitAndAgreesWithOneThread() throws {
        let lora = Self.adapter(dropout: 0.1)
        let batch = Self.longBatch + Self.batch
        let two = try Tiny.model.lossAndGradients(batch, lora: lora, dropoutSeed: 4, step: 2, threads: 2)
        let again = try Tiny.model.lossAndGradients(batch, lora: lora, dropoutSeed: 4, step: 2, threads: 2)
        #expect(two.loss.bitPattern == again.loss.bitPattern)
        #expect(two.gradients.map { $0.map(\.bitPattern) } == again.gradients.map { $0.map(\.bitPattern) })
        let one = try Tiny.model.lossAndGradients(batch, lora: lora, dropoutSeed: 4, step: 2, threads: 1)
        #expect(abs(one.loss - two.loss) <= 1e-6 * abs(one.loss))
        for (a, b) in zip(one.gradients, two.gradients) {
            #expect(maxAbsDifference(a, b) <= 1e-4 * a.map(abs).max()!)
        }
    }

    @Test func lossAndGradientsAreBitIdenticalOnRepeat() throws {
        let lora = Self.adapter(dropout: 0.1)
        let first = try Tiny.model.lossAndGradients(Self.batch, lora: lora, dropoutSeed: 4, step: 2, threads: 1)
        let second = try Tiny.model.lossAndGradients(Self.batch, lora: lora, dropoutSeed: 4, step: 2, threads: 1)
        #expect(first.loss.bitPattern == second.loss.bitPattern)
        #expect(first.gradients.map { $0.map(\.bitPattern) } == second.gradients.map { $0.map(\.bitPattern) })
        // Another step draws other dropout masks.
        let other = try Tiny.model.lossAndGradients(Self.batch, lora: lora, dropoutSeed: 4, step: 3, threads: 1)
        #expect(other.loss != first.loss)
    }

    @Test func aBatchWithoutWeightedTargetsHasZeroLossAndGradients() throws {
        let lora = Self.adapter()
        let result = try Tiny.model.lossAndGradients([TrainingSequence(tokens: [1, 2, 3], weights: [0, 0])], lora: lora, dropoutSeed: 0, step: 0)
        #expect(result.loss == 0 && result.weightSum == 0)
        #expect(result.gradients.allSatisfy { $0.allSatisfy { $0 == 0 } })
    }
}
