import AdaptCore
import Foundation
import Model
import ReplayBuffer
import Storage
import Training

/// Which sources a `worse` candidate's training data came from, and what each did to held-out NLL, as far as a
/// first-order estimate can tell (docs/gate-and-registry.md, "Which batch made it worse").
///
/// The sources named are those of the lineage's training examples imported after the incumbent was
/// registered (every source when the incumbent is the base model) and no later than the prune step's clock
/// reading, so a live run and its replay name the same ones. For each, its examples in tonight's training
/// sample get one number:
///
///     nll_change(S) = −η · ⟨∇θ H(θc), ∇θ L_S(θc)⟩
///
/// where θc are the candidate's LoRA weights, H the mean over held-out examples of each one's mean token NLL
/// (what the gate's means compare), L_S the weighted mean token loss of S's sampled examples as the trainer
/// computes it, and η the run's learning rate. It is the change of H that one plain gradient step of size η on
/// S's examples would make from the candidate's weights (a single-checkpoint TracIn score, Pruthi et al.,
/// NeurIPS 2020): positive means training on S pulls the held-out examples' NLL up. A source is blamed when
/// its number is positive. One backward pass per sampled example of the named sources and per held-out
/// example, reusing the trainer's backward; no retraining.
///
/// Limits: it is a local, first-order estimate at the end of training, not what leaving S out of the whole run
/// would have changed; it ignores AdamW's per-parameter scaling, the steps already taken and how sources
/// interact; a source with no example in tonight's sample gets no number and is never blamed. When the estimate
/// blames no source at all (a worse night it cannot explain), runs planned with `blame_fallback` blame every source
/// trained on tonight instead, and say so (`blame_rule: every_source`).
public struct SourceAttribution: Sendable, Equatable, Codable {
    public struct Source: Sendable, Equatable, Codable {
        public let name: String
        /// Training examples of the source in the window.
        public let examples: Int
        /// Of those, quarantined before tonight.
        public let quarantined: Int
        /// Of those, in tonight's training sample (the ones the estimate uses).
        public let trained: Int
        /// nil when none was trained tonight.
        public let nllChange: Double?

        enum CodingKeys: String, CodingKey {
            case name = "source", examples, quarantined = "quarantined_before", trained = "trained_examples"
            case nllChange = "nll_change"
        }

        init(name: String, examples: Int, quarantined: Int, trained: Int, nllChange: Double?) {
            self.name = name
            self.examples = examples
            self.quarantined = quarantined
            self.trained = trained
            self.nllChange = nllChange
        }

        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(name: try c.decode(String.self, forKey: .name), examples: try c.decode(Int.self, forKey: .examples),
                      quarantined: try c.decode(Int.self, forKey: .quarantined), trained: try c.decode(Int.self, forKey: .trained),
                      nllChange: try c.decode(Double?.self, forKey: .nllChange))
        }

        // By hand so that a source with nothing trained tonight has an explicit null.
        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(name, forKey: .name)
            try c.encode(examples, forKey: .examples)
            try c.encode(quarantined, forKey: .quarantined)
            try c.encode(trained, forKey: .trained)
            try c.encode(nllChange, forKey: .nllChange)
        }
    }

    static let method = "gradient_alignment"

    /// The incumbent's registration time: examples imported after it are "since the active version".
    public let since: Int64?
    /// The prune step's clock reading: the latest import the window takes.
    public let until: Int64?
    public let learningRate: Double
    public let heldOutExamples: Int
    public let sources: [Source]

    /// When the estimate blames nobody, blame every source trained on tonight (the eval input's `blame_fallback`;
    /// Pipelines' `LaterRule.blameEverySource`). False in runs planned before the rule.
    public let fallsBackToEverySource: Bool

    /// Sources whose training raises held-out NLL, by name; when there is none and the fallback is on, every
    /// source with examples in tonight's training set.
    public var blamed: [String] {
        let estimated = sources.filter { ($0.nllChange ?? 0) > 0 }.map(\.name)
        return fallbackApplies ? sources.filter { $0.trained > 0 }.map(\.name) : estimated
    }

    /// Which rule named `blamed`: `every_source` when the fallback did, else the estimate (`method`).
    var fallbackApplies: Bool {
        fallsBackToEverySource && !sources.contains { ($0.nllChange ?? 0) > 0 } && sources.contains { $0.trained > 0 }
    }

    init(since: Int64?, until: Int64?, learningRate: Double, heldOutExamples: Int, sources: [Source],
         fallsBackToEverySource: Bool = false) {
        self.since = since
        self.until = until
        self.learningRate = learningRate
        self.heldOutExamples = heldOutExamples
        self.sources = sources
        self.fallsBackToEverySource = fallsBackToEverySource
    }

    enum CodingKeys: String, CodingKey {
        case method, since, sources, blamed
        case sinceMilliseconds = "since_ms", untilMilliseconds = "until_ms", learningRate = "learning_rate"
        case heldOutExamples = "held_out_examples", blameRule = "blame_rule", fallback = "blame_fallback"
    }

    // `method`, `since` (the time as text), `blame_rule` and `blamed` follow from the other fields: written, not read
    // back. `blame_fallback` is written only when on, so an attribution recorded before the rule keeps its bytes.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(since: try c.decode(Int64?.self, forKey: .sinceMilliseconds), until: try c.decode(Int64?.self, forKey: .untilMilliseconds),
                  learningRate: try c.decode(Double.self, forKey: .learningRate),
                  heldOutExamples: try c.decode(Int.self, forKey: .heldOutExamples), sources: try c.decode([Source].self, forKey: .sources),
                  fallsBackToEverySource: try c.decodeIfPresent(Bool.self, forKey: .fallback) ?? false)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(Self.method, forKey: .method)
        try c.encode(since.map(Timestamp.iso8601), forKey: .since)
        try c.encode(since, forKey: .sinceMilliseconds)
        try c.encode(until, forKey: .untilMilliseconds)
        try c.encode(learningRate, forKey: .learningRate)
        try c.encode(heldOutExamples, forKey: .heldOutExamples)
        try c.encode(sources, forKey: .sources)
        try c.encode(blamed, forKey: .blamed)
        if fallsBackToEverySource {
            try c.encode(true, forKey: .fallback)
            try c.encode(fallbackApplies ? "every_source" : Self.method, forKey: .blameRule)
        }
    }

    /// Measures the window's sources on `database` (the step's connection, after the sample step's writes).
    static func measure(scorer: HeldOutScorer, candidate: LoRAParameters, heldOut: [(id: String, sequence: TrainingSequence)],
                        training: [SnapshotExample], lineage: String, since: Int64?, until: Int64?, learningRate: Double,
                        fallsBackToEverySource: Bool = false, database: any SQLConnection) throws -> SourceAttribution {
        let window = try ReplayStore.trainSources(lineage: lineage, after: since, upTo: until, in: database)
        let sourceOf = try ReplayStore.sources(of: training.map(\.id), in: database)
        let named = Set(window.map(\.source))
        var bySource: [String: [SnapshotExample]] = [:]
        for example in training {
            if let source = sourceOf[example.id], named.contains(source) { bySource[source, default: []].append(example) }
        }

        var heldOutGradient: [[Float]]?
        var sources: [Source] = []
        for entry in window {
            let examples = bySource[entry.source] ?? []
            var change: Double?
            let sequences = try scorer.trainingSequences(examples)
            if !sequences.isEmpty {
                // Computed once, and only when some source has something to compare with it.
                let target = try heldOutGradient ?? meanGradient(perExample(heldOut.map(\.sequence)), scorer: scorer, lora: candidate)
                heldOutGradient = target
                let gradient = try meanGradient(sequences, scorer: scorer, lora: candidate)
                change = -learningRate * dot(target, gradient)
            }
            sources.append(Source(name: entry.source, examples: entry.examples, quarantined: entry.quarantined,
                                  trained: examples.count, nllChange: change))
        }
        return SourceAttribution(since: since, until: until, learningRate: learningRate, heldOutExamples: heldOut.count,
                                 sources: sources, fallsBackToEverySource: fallsBackToEverySource)
    }

    /// Each sequence's weights scaled to sum to 1, so a weighted token mean over them is the mean over
    /// examples of each one's mean token NLL (the held-out score).
    static func perExample(_ sequences: [TrainingSequence]) -> [TrainingSequence] {
        sequences.compactMap { sequence in
            let total = sequence.weights.reduce(Float(0), +)
            guard total > 0 else { return nil }
            return TrainingSequence(tokens: sequence.tokens, weights: sequence.weights.map { $0 / total })
        }
    }

    /// The gradient of the weighted token mean loss over `sequences`, in micro-batches of the trainer's size
    /// (their gradients are of batch means: scaled back to sums, added, divided once).
    static func meanGradient(_ sequences: [TrainingSequence], scorer: HeldOutScorer, lora: LoRAParameters,
                             batchSize: Int = 4) throws -> [[Float]] {
        var total = lora.values.map { [Double](repeating: 0, count: $0.count) }
        var weightSum = 0.0
        for start in stride(from: 0, to: sequences.count, by: batchSize) {
            let batch = Array(sequences[start..<min(start + batchSize, sequences.count)])
            let result = try scorer.model.lossAndGradients(batch, lora: lora, dropoutSeed: 0, step: 0)
            guard result.weightSum > 0 else { continue }
            for t in total.indices {
                for i in total[t].indices { total[t][i] += Double(result.gradients[t][i]) * result.weightSum }
            }
            weightSum += result.weightSum
        }
        guard weightSum > 0 else { return lora.values.map { [Float](repeating: 0, count: $0.count) } }
        return total.map { $0.map { Float($0 / weightSum) } }
    }

    static func dot(_ a: [[Float]], _ b: [[Float]]) -> Double {
        var sum = 0.0
        for t in a.indices {
            for i in a[t].indices { sum += Double(a[t][i]) * Double(b[t][i]) }
        }
        return sum
    }
}

extension HeldOutScorer {
    /// Sequences of `examples` as the train step builds them: every assistant turn a target, each example's
    /// weight on its targets, the same truncation to `maxLength`.
    func trainingSequences(_ examples: [SnapshotExample]) throws -> [TrainingSequence] {
        var builder = SequenceBuilder(maxLength: maxLength)
        var out: [TrainingSequence] = []
        for line in examples {
            let example = TrainBody.example(line)
            let sequence: TrainingSequence?
            if example.conversation != nil {
                sequence = builder.append(segments: try LoRATrainingRun.segments(of: example, tokenizer: tokenizer, formatter: formatter,
                                                                                 markers: markers),
                                          weight: example.weight)
            } else {
                let (prompt, completion) = try LoRATrainingRun.tokens(of: example, tokenizer: tokenizer, formatter: formatter,
                                                                      markers: markers)
                sequence = builder.append(prompt: prompt, completion: completion, weight: example.weight)
            }
            if let sequence { out.append(sequence) }
        }
        return out
    }
}
