import Adapters
import Foundation
import Model

/// The real model as the training loop's gradient source: LoRA adapters on a frozen llama-family base.
///
/// The loop's parameters are the adapter's tensors in `LoRAParameters` order ("blk.<i>.<proj>.lora_a"
/// (rank, in), "blk.<i>.<proj>.lora_b" (out, rank)); the model computes the loss and the gradients of
/// the adapter tensors only. Dropout is keyed by (run seed, micro-batch counter), so the same step gives
/// the same bits in a resumed run.
public struct LoRAGradientSource: GradientSource {
    public let model: LlamaModel
    public let config: LoRAConfig
    /// Seed of the dropout stream (the run's seed).
    public let seed: UInt64
    /// The team size of every pass; nil reads OpenBLAS's count at each pass, which another thread may change.
    public let threads: Int?

    public init(model: LlamaModel, config: LoRAConfig, seed: UInt64, threads: Int? = nil) {
        self.model = model
        self.config = config
        self.seed = seed
        self.threads = threads
    }

    /// A fresh adapter for `model` (A from the seeded RNG, B zero) as the loop's named tensors.
    public static func initialParameters(for model: LlamaModel, config: LoRAConfig, seed: UInt64) -> NamedTensors {
        let lora = LoRAParameters.initialized(for: model, config: config, seed: seed)
        return NamedTensors(names: lora.names, shapes: lora.shapes, values: lora.values)
    }

    func lora(_ parameters: NamedTensors, dropout: Float? = nil) -> LoRAParameters {
        var config = self.config
        if let dropout { config.dropout = dropout }
        return LoRAParameters(config: config, names: parameters.names, shapes: parameters.shapes, values: parameters.values)
    }

    /// The model returns the weighted mean and its gradient; the loop sums micro-batches, so both are scaled
    /// back to sums by the batch's weight.
    public func lossAndGradients(_ batch: [TrainingSequence], parameters: NamedTensors, step: UInt64) throws
        -> (loss: Double, weightSum: Double, gradients: [[Float]]) {
        var result = try model.lossAndGradients(batch, lora: lora(parameters), dropoutSeed: seed, step: step, threads: threads)
        let scale = Float(result.weightSum)
        for t in result.gradients.indices {
            result.gradients[t].withUnsafeMutableBufferPointer { g in
                for i in g.indices { g[i] *= scale }
            }
        }
        return (result.loss * result.weightSum, result.weightSum, result.gradients)
    }

    /// Forward passes only, without dropout: Σ w·(−log p) over every weighted position.
    public func loss(_ batch: [TrainingSequence], parameters: NamedTensors) -> (loss: Double, weightSum: Double) {
        let adapter = lora(parameters, dropout: 0)
        let V = model.hyperparameters.vocabularySize
        var loss = 0.0, weightSum = 0.0
        for sequence in batch where sequence.tokens.count > 1 {
            var cache = KVCache()
            let inputs = Array(sequence.tokens.dropLast())
            let logits = model.forwardAll(tokens: inputs, lora: adapter, cache: &cache)   // (T−1, V)
            for i in 0..<inputs.count where sequence.weights[i] != 0 {
                let row = logits[(i * V)..<((i + 1) * V)]
                let top = Double(row.max()!)
                var sum = 0.0
                for z in row { sum += Foundation.exp(Double(z) - top) }
                let w = Double(sequence.weights[i])
                loss += w * (top + Foundation.log(sum) - Double(row[row.startIndex + sequence.tokens[i + 1]]))
                weightSum += w
            }
        }
        return (loss, weightSum)
    }
}
