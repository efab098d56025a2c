import AdaptCore
import Adapters
import Evaluation
import Foundation
import Model
import Registry
import ReplayBuffer
import Training

/// Scores held-out examples under the base model with or without an adapter: the mean token negative
/// log-likelihood of each completion (DESIGN.md, "Evaluation and promotion"); for a whole conversation, of its
/// last assistant turn given every turn before it.
///
/// Examples are formatted and tokenized exactly as the train step does (`LoRATrainingRun.tokens`, the same
/// truncation to `max_length`), so a score measures what training optimised. Each example's weight is
/// ignored here: the gate compares examples, not their importance in training. Examples with nothing left to
/// score after truncation are left out, identically for every adapter.
struct HeldOutScorer {
    let model: LlamaModel
    let tokenizer: Tokenizer
    let formatter: ChatFormatter
    let maxLength: Int
    /// What control-token text in a prompt becomes: as the train step of the same run tokenized it.
    let markers: PromptMarkers

    init(modelURL: URL, maxLength: Int, base: BaseWeightStorage, forward: ForwardProducts = .sgemm, chatFormat: ChatConvention? = nil,
         markers: PromptMarkers = .text) throws {
        let file = try GGUFFile(url: modelURL)
        tokenizer = try Tokenizer(gguf: file)
        formatter = try ChatFormatter(gguf: file, chatFormat: chatFormat)
        model = try LlamaModel(file: file, base: base, forward: forward)
        self.maxLength = min(maxLength, model.hyperparameters.contextLength)
        self.markers = markers
    }

    /// The sequences to score, keyed by example id, in snapshot order.
    func sequences(_ examples: [SnapshotExample]) throws -> [(id: String, sequence: TrainingSequence)] {
        var builder = SequenceBuilder(maxLength: maxLength)
        var out: [(String, TrainingSequence)] = []
        for example in examples {
            let training = TrainBody.example(example)
            let sequence: TrainingSequence?
            if training.conversation != nil {
                // The last reply given everything before it: earlier replies are context here, not scored. A
                // conversation longer than max_length loses its oldest tokens, not its last reply.
                let segments = try LoRATrainingRun.segments(of: training, tokenizer: tokenizer, formatter: formatter, markers: markers)
                sequence = builder.append(segments: segments.lastTargetOnly, weight: 1, keepingEnd: true)
            } else {
                let (prompt, completion) = try LoRATrainingRun.tokens(
                    of: TrainingExample(prompt: example.prompt, completion: example.completion, weight: 1),
                    tokenizer: tokenizer, formatter: formatter, markers: markers)
                sequence = builder.append(prompt: prompt, completion: completion, weight: 1)
            }
            if let sequence { out.append((example.id, sequence)) }
        }
        return out
    }

    /// Mean NLL per sequence under `adapter` (nil: the base model).
    func score(_ sequences: [(id: String, sequence: TrainingSequence)], adapter: LoRAParameters?) -> [ExampleScore] {
        let V = model.hyperparameters.vocabularySize
        return sequences.map { id, sequence in
            var cache = KVCache()
            let inputs = Array(sequence.tokens.dropLast())
            let logits = model.forwardAll(tokens: inputs, lora: adapter, cache: &cache)   // (T−1, V)
            var total = 0.0, count = 0.0
            for i in 0..<inputs.count where sequence.weights[i] != 0 {
                let row = logits[(i * V)..<((i + 1) * V)]
                let top = Double(row.max()!)
                var sum = 0.0
                for z in row { sum += Foundation.exp(Double(z) - top) }
                total += top + Foundation.log(sum) - Double(row[row.startIndex + sequence.tokens[i + 1]])
                count += 1
            }
            return ExampleScore(exampleID: id, meanNLL: total / count)
        }
    }

    /// `score`, reusing the cache: the incumbent was usually scored on the same examples the night before (as
    /// that night's candidate). Keys: `modelKey` (base model, BLAS threads: both change the low bits), the
    /// adapter's blob digest, and each sequence's tokens and weights (so formatting and truncation are covered).
    /// Returns the scores, how many came from the cache, and the new entries, which the caller stores in its
    /// job's completion transaction (a worker that lost its lease caches nothing).
    func score(_ sequences: [(id: String, sequence: TrainingSequence)], adapter: LoRAParameters?, weights: ScoreCache.Weights,
               cache: ScoreCache, modelKey: Digest) throws -> (scores: [ExampleScore], cached: Int, fresh: [ScoreCache.Entry]) {
        let keys = sequences.map { Self.key($0.sequence) }
        let hits = try cache.lookup(model: modelKey, weights: weights, examples: keys)
        let missing = sequences.indices.filter { hits[keys[$0]] == nil }
        let fresh = score(missing.map { sequences[$0] }, adapter: adapter)
        let entries = zip(missing, fresh).map { index, score in
            ScoreCache.Entry(example: keys[index], meanNLL: score.meanNLL, tokens: sequences[index].sequence.tokens.count)
        }
        var byIndex = Dictionary(uniqueKeysWithValues: zip(missing, fresh))
        let scores = sequences.indices.map { index in
            byIndex.removeValue(forKey: index) ?? ExampleScore(exampleID: sequences[index].id, meanNLL: hits[keys[index]]!.meanNLL)
        }
        return (scores, sequences.count - missing.count, entries)
    }

    static func key(_ sequence: TrainingSequence) -> Digest {
        var text = "seq/v1:" + sequence.tokens.map(String.init).joined(separator: ",") + ";"
        text += sequence.weights.map { String($0.bitPattern, radix: 16) }.joined(separator: ",")
        return Digest.sha256(text)
    }

    /// The LoRA weights of an adapter file, checked against this base model.
    func adapter(_ data: Data, name: String, baseModelDigest: Digest) throws -> LoRAParameters {
        let (file, _) = try AdapterFile.decode(data, name: name)
        let config: LoRAConfig
        do { config = try LoRAConfig(file.metadata.settings) } catch {
            throw StepError.malformedOutput(step: name, field: "targets")
        }
        if file.metadata.baseModelDigest != baseModelDigest {
            throw StepError.adapterForAnotherModel(adapter: name, expected: baseModelDigest, actual: file.metadata.baseModelDigest)
        }
        return LoRAParameters(config: config, names: file.tensors.names, shapes: file.tensors.shapes, values: file.tensors.values)
    }
}
