import AdaptCore
import Adapters
import Foundation
import Model
@testable import Training

/// A real differentiable stand-in for the language model: a frozen bigram model with two low-rank adapters,
///
///     z (V) = W0[:, x] + s · B (A[:, x] ∘ mask) + s · D C[:, x],    loss = Σ w · (logsumexp(z) − z[y])
///
/// with A (r, V), B (V, r), C (r, V), D (V, r), s = alpha / r, and seeded inverted dropout on A's output.
/// Gradients are analytic. Computation is in Double, so finite differences can check it closely.
struct BigramLoRA: GradientSource {
    let vocabulary: Int
    let rank: Int
    let scale: Double
    let dropout: Double
    let rng: CounterRNG
    /// W0 (V, V) stored row-major as W0[target][input].
    let base: [Double]

    init(vocabulary: Int = 12, rank: Int = 3, alpha: Double = 6, dropout: Double = 0, seed: UInt64 = 7) {
        self.vocabulary = vocabulary
        self.rank = rank
        self.scale = alpha / Double(rank)
        self.dropout = dropout
        self.rng = CounterRNG(seed: seed)
        let model = CounterRNG(seed: 99)
        base = (0..<(vocabulary * vocabulary)).map { model.normal(.test, step: 1, index: UInt32($0)) * 0.5 }
    }

    /// LoRA-style start: A and C small random, B and D zero.
    func initialParameters(seed: UInt64 = 3) -> NamedTensors {
        let rng = CounterRNG(seed: seed)
        func random(_ count: Int, _ step: UInt64) -> [Float] {
            (0..<count).map { Float(rng.normal(.loraInit, step: step, index: UInt32($0)) * 0.3) }
        }
        return NamedTensors(names: ["blk.0.q.lora_a", "blk.0.q.lora_b", "blk.1.v.lora_a", "blk.1.v.lora_b"],
                            shapes: [[rank, vocabulary], [vocabulary, rank], [rank, vocabulary], [vocabulary, rank]],
                            values: [random(rank * vocabulary, 0), [Float](repeating: 0, count: vocabulary * rank),
                                     random(rank * vocabulary, 1), [Float](repeating: 0, count: vocabulary * rank)])
    }

    func lossAndGradients(_ batch: [TrainingSequence], parameters: NamedTensors, step: UInt64)
        -> (loss: Double, weightSum: Double, gradients: [[Float]]) {
        let r = compute(batch, parameters: parameters, step: step, gradients: true)
        return (r.loss, r.weightSum, r.gradients.map { $0.map(Float.init) })
    }

    func loss(_ batch: [TrainingSequence], parameters: NamedTensors) -> (loss: Double, weightSum: Double) {
        let r = compute(batch, parameters: parameters, step: nil, gradients: false)
        return (r.loss, r.weightSum)
    }

    func compute(_ batch: [TrainingSequence], parameters: NamedTensors, step: UInt64?, gradients wantGradients: Bool)
        -> (loss: Double, weightSum: Double, gradients: [[Double]]) {
        let V = vocabulary, R = rank
        let p = parameters.values.map { $0.map(Double.init) }
        let (A, B, C, D) = (p[0], p[1], p[2], p[3])
        var grads = parameters.values.map { [Double](repeating: 0, count: $0.count) }
        var loss = 0.0, weightSum = 0.0
        for (b, sequence) in batch.enumerated() {
            for i in 0..<(sequence.tokens.count - 1) where sequence.weights[i] != 0 {
                let w = Double(sequence.weights[i])
                let x = sequence.tokens[i], y = sequence.tokens[i + 1]
                // h1 (R) = A[:, x] ∘ mask / (1 − p); h2 (R) = C[:, x]
                var mask = [Double](repeating: 1, count: R)
                if let step, dropout > 0 {
                    for k in 0..<R {
                        let u = rng.uniform(.dropout, step: step, index: UInt32((b * 4096 + i) * R + k))
                        mask[k] = u < dropout ? 0 : 1 / (1 - dropout)
                    }
                }
                let h1 = (0..<R).map { A[$0 * V + x] * mask[$0] }
                let h2 = (0..<R).map { C[$0 * V + x] }
                var z = (0..<V).map { base[$0 * V + x] }   // (V)
                for v in 0..<V {
                    for k in 0..<R { z[v] += scale * (B[v * R + k] * h1[k] + D[v * R + k] * h2[k]) }
                }
                let top = z.max()!
                let sum = z.reduce(0) { $0 + Foundation.exp($1 - top) }
                loss += w * (top + Foundation.log(sum) - z[y])
                weightSum += w
                guard wantGradients else { continue }
                let dz = (0..<V).map { w * (Foundation.exp(z[$0] - top) / sum - ($0 == y ? 1 : 0)) }  // (V)
                for v in 0..<V {
                    for k in 0..<R {
                        grads[1][v * R + k] += scale * dz[v] * h1[k]
                        grads[3][v * R + k] += scale * dz[v] * h2[k]
                    }
                }
                for k in 0..<R {
                    var dh1 = 0.0, dh2 = 0.0
                    for v in 0..<V {
                        dh1 += scale * B[v * R + k] * dz[v]
                        dh2 += scale * D[v * R + k] * dz[v]
                    }
                    grads[0][k * V + x] += dh1 * mask[k]
                    grads[2][k * V + x] += dh2
                }
            }
        }
        return (loss, weightSum, grads)
    }

    /// A toy dataset: sequences following a fixed successor rule the base model does not know.
    func dataset(count: Int, length: Int = 8, seed: UInt64 = 11) -> [TrainingSequence] {
        let rng = CounterRNG(seed: seed)
        return (0..<count).map { n in
            var tokens = [Int(rng.below(UInt64(vocabulary), .test, step: 2, index: UInt32(n)))]
            for _ in 1..<length { tokens.append((tokens.last! * 5 + 3) % vocabulary) }
            let promptLength = 2
            var weights = [Float](repeating: 0, count: length - 1)
            let weight: Float = n % 3 == 0 ? 2 : 1
            for i in (promptLength - 1)..<(length - 1) { weights[i] = weight }
            return TrainingSequence(tokens: tokens, weights: weights)
        }
    }
}
