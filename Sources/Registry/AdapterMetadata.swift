import AdaptCore

/// What the registry keeps about an adapter besides its bytes: counts, date ranges, digests, identifiers
/// and numbers (DESIGN.md, Privacy: "Adapter metadata holds counts, date ranges, metrics and digests, never
/// user text").
///
/// Every field is a number, a `Digest`, a `ShortIdentifier` or a struct of those, so no free text can be
/// stored: that is the enforcement, and `MetadataPrivacyTests` checks it against real training strings.
public struct AdapterMetadata: Sendable, Equatable, Codable {
    /// SHA-256 of the base model file the adapter was trained on (a session refuses another base).
    public var baseModel: Digest?
    /// The chat formatting convention used in training (e.g. `chatml`).
    public var chatConvention: ShortIdentifier?
    public var trainingExamples: Int
    public var heldOutExamples: Int
    public var trainingTokens: Int
    /// Creation times of the oldest and newest training example, in milliseconds since the epoch.
    public var dataFrom: Int64?
    public var dataTo: Int64?
    /// Digest of the sampled training set (the sample step's output blob).
    public var dataset: Digest?
    public var training: TrainingSummary?

    public init(baseModel: Digest? = nil, chatConvention: ShortIdentifier? = nil, trainingExamples: Int = 0,
                heldOutExamples: Int = 0, trainingTokens: Int = 0, dataFrom: Int64? = nil, dataTo: Int64? = nil,
                dataset: Digest? = nil, training: TrainingSummary? = nil) {
        self.baseModel = baseModel
        self.chatConvention = chatConvention
        self.trainingExamples = trainingExamples
        self.heldOutExamples = heldOutExamples
        self.trainingTokens = trainingTokens
        self.dataFrom = dataFrom
        self.dataTo = dataTo
        self.dataset = dataset
        self.training = training
    }

    enum CodingKeys: String, CodingKey {
        case baseModel = "base_model", chatConvention = "chat_convention", trainingExamples = "training_examples"
        case heldOutExamples = "held_out_examples", trainingTokens = "training_tokens", dataFrom = "data_from"
        case dataTo = "data_to", dataset, training
    }
}

/// The training configuration, as numbers and identifiers.
public struct TrainingSummary: Sendable, Equatable, Codable {
    public var rank: Int
    public var loraAlpha: Double
    public var learningRate: Double
    public var steps: Int
    public var batchSize: Int
    public var seed: UInt64
    public var blasThreads: Int
    public var targetModules: [ShortIdentifier]
    /// Digest of the full training configuration (the train job's input).
    public var config: Digest?

    public init(rank: Int, loraAlpha: Double, learningRate: Double, steps: Int, batchSize: Int, seed: UInt64,
                blasThreads: Int, targetModules: [ShortIdentifier], config: Digest? = nil) {
        self.rank = rank
        self.loraAlpha = loraAlpha
        self.learningRate = learningRate
        self.steps = steps
        self.batchSize = batchSize
        self.seed = seed
        self.blasThreads = blasThreads
        self.targetModules = targetModules
        self.config = config
    }

    enum CodingKeys: String, CodingKey {
        case rank, steps, seed, config
        case loraAlpha = "lora_alpha", learningRate = "learning_rate", batchSize = "batch_size"
        case blasThreads = "blas_threads", targetModules = "target_modules"
    }
}

/// Measurements of a version; unlike `AdapterMetadata` they can be added after registration (the eval step
/// records the gate's verdict). `registry list --json` prints them as `metrics`.
public struct VersionMetrics: Sendable, Equatable, Codable {
    public var finalTrainLoss: Double?
    public var heldOutMeanNLL: Double?
    public var baselineHeldOutMeanNLL: Double?
    public var gate: GateSummary?

    public init(finalTrainLoss: Double? = nil, heldOutMeanNLL: Double? = nil, baselineHeldOutMeanNLL: Double? = nil,
                gate: GateSummary? = nil) {
        self.finalTrainLoss = finalTrainLoss
        self.heldOutMeanNLL = heldOutMeanNLL
        self.baselineHeldOutMeanNLL = baselineHeldOutMeanNLL
        self.gate = gate
    }

    enum CodingKeys: String, CodingKey {
        case gate
        case finalTrainLoss = "final_train_loss", heldOutMeanNLL = "held_out_mean_nll"
        case baselineHeldOutMeanNLL = "baseline_held_out_mean_nll"
    }
}

/// The gate's verdict as the registry records it. Field names are those of `adapt gate --json`, so that
/// report can be decoded into this directly (its extra fields, e.g. `reason`, are not kept).
public struct GateSummary: Sendable, Equatable, Codable {
    public enum Outcome: String, Sendable, Codable {
        case better
        case notEnoughEvidence = "not_enough_evidence"
        case worse
        /// The candidate failed the forgetting guard on the engine's canary.
        case forgets
    }

    public var outcome: Outcome
    public var n: Int
    public var statistic: Double?
    public var pValue: Double?
    public var method: ShortIdentifier
    public var zeroMethod: ShortIdentifier
    public var alternative: ShortIdentifier
    public var medianDifference: Double?
    public var effectSize: Double?
    public var alpha: Double?
    /// Which held-out examples were compared (digest of their ids), when the pipeline ran the gate.
    public var examples: Digest?

    public init(outcome: Outcome, n: Int, statistic: Double?, pValue: Double?, method: ShortIdentifier,
                zeroMethod: ShortIdentifier, alternative: ShortIdentifier, medianDifference: Double?,
                effectSize: Double?, alpha: Double?, examples: Digest? = nil) {
        self.outcome = outcome
        self.n = n
        self.statistic = statistic
        self.pValue = pValue
        self.method = method
        self.zeroMethod = zeroMethod
        self.alternative = alternative
        self.medianDifference = medianDifference
        self.effectSize = effectSize
        self.alpha = alpha
        self.examples = examples
    }

    enum CodingKeys: String, CodingKey {
        case outcome, n, statistic, method, alternative, alpha, examples
        case pValue = "p_value", zeroMethod = "zero_method", medianDifference = "median_difference"
        case effectSize = "effect_size"
    }
}
