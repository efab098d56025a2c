import AdaptCore

/// Parameters of the prune step: how long an example is kept, and whether adapters trained on it go with it.
public struct PruneParameters: Sendable, Equatable, Codable {
    /// Examples older than this many days are deleted before sampling (held-out examples are kept: the
    /// held-out set only grows, DESIGN.md "Evaluation and promotion").
    public var ttlDays: Int
    /// Whether expiry also retires the adapter versions whose `trained_from` chain trained on an expired example
    /// (as `data forget --retire-adapters` does). Off, they are listed in the prune step's output and events only:
    /// with warm starts every version descends from the first night's, so retiring would send the lineage back to
    /// the base model whenever its oldest examples expire (docs/privacy.md, "TTL expiry and adapters").
    public var ttlRetiresAdapters: Bool

    public init(ttlDays: Int = 30, ttlRetiresAdapters: Bool = false) {
        self.ttlDays = ttlDays
        self.ttlRetiresAdapters = ttlRetiresAdapters
    }

    enum CodingKeys: String, CodingKey { case ttlDays = "ttl_days", ttlRetiresAdapters = "ttl_retires_adapters" }

    /// A step planned before the field has none, and retires nothing.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(ttlDays: try c.decode(Int.self, forKey: .ttlDays),
                  ttlRetiresAdapters: try c.decodeIfPresent(Bool.self, forKey: .ttlRetiresAdapters) ?? false)
    }

    /// Written only when on: every pipeline without it keeps its digest, and every prune input its bytes.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(ttlDays, forKey: .ttlDays)
        if ttlRetiresAdapters { try c.encode(true, forKey: .ttlRetiresAdapters) }
    }
}

/// How much any one example may be used, and how much text one night may train on.
public struct PrivacyBudget: Sendable, Equatable, Codable {
    /// An example is never sampled into more than this many nights' training sets.
    public var maxUsesPerExample: Int
    /// The sampled training set of one night holds at most this many tokens (prompt and completion).
    public var maxTokensPerNight: Int

    public init(maxUsesPerExample: Int = 8, maxTokensPerNight: Int = 65_536) {
        self.maxUsesPerExample = maxUsesPerExample
        self.maxTokensPerNight = maxTokensPerNight
    }

    enum CodingKeys: String, CodingKey {
        case maxUsesPerExample = "max_uses_per_example", maxTokensPerNight = "max_tokens_per_night"
    }
}

/// Parameters of the sample step: tonight's training set and the lineage's held-out split.
public struct SampleParameters: Sendable, Equatable, Codable {
    /// At most this many examples are drawn for tonight (fewer when the budget or the data runs out).
    public var sampleSize: Int
    /// The share of examples assigned to the held-out set by a stable hash of their id.
    public var heldOutFraction: Double

    public init(sampleSize: Int = 128, heldOutFraction: Double = 0.25) {
        self.sampleSize = sampleSize
        self.heldOutFraction = heldOutFraction
    }

    enum CodingKeys: String, CodingKey { case sampleSize = "sample_size", heldOutFraction = "held_out_fraction" }
}

/// How the learning rate moves after warm-up.
public enum LearningRateSchedule: String, Sendable, Codable, CaseIterable {
    case constant, linear, cosine
}

/// The projections of a llama block a LoRA adapter may wrap, by their GGUF tensor names.
public enum LoRATarget: String, Sendable, Codable, CaseIterable {
    case attnQ = "attn_q", attnK = "attn_k", attnV = "attn_v", attnOutput = "attn_output"
    case ffnGate = "ffn_gate", ffnUp = "ffn_up", ffnDown = "ffn_down"

    /// The Hugging Face / PEFT names people will type, for "did you mean".
    static let peftNames: [String: LoRATarget] = [
        "q_proj": .attnQ, "k_proj": .attnK, "v_proj": .attnV, "o_proj": .attnOutput,
        "gate_proj": .ffnGate, "up_proj": .ffnUp, "down_proj": .ffnDown,
    ]
}

/// Stop training when the loss on a validation slice of tonight's sample stops improving.
public struct EarlyStopping: Sendable, Equatable, Codable {
    /// Measure every this many optimizer steps (M).
    public var everySteps: Int
    /// Stop after this many measurements in a row without a new best (P).
    public var patience: Int

    public init(everySteps: Int = TrainingDefaults.earlyStoppingEvery, patience: Int = TrainingDefaults.earlyStoppingPatience) {
        self.everySteps = everySteps
        self.patience = patience
    }

    enum CodingKeys: String, CodingKey { case everySteps = "every_steps", patience }
}

/// Parameters of the train step: LoRA shape, optimizer, batching, checkpoints, threads.
public struct TrainParameters: Sendable, Equatable, Codable {
    /// The largest `alpha` a pipeline may name: the largest an adapter file records (`AdapterSettings.maximumAlpha`,
    /// a module this one does not import; a test keeps the two equal).
    public static let maximumAlpha = 1_000_000.0
    /// Optimizer steps (each one `batchSize × gradAccumulation` sequences).
    public var steps: Int
    public var rank: Int
    /// LoRA scaling numerator: the update is scaled by alpha / rank (Hu et al. 2021, §4.1).
    public var alpha: Double
    /// Dropout on the LoRA input, in [0, 1).
    public var dropout: Double
    public var targets: [LoRATarget]
    /// Peak AdamW learning rate.
    public var learningRate: Double
    public var schedule: LearningRateSchedule
    /// Steps of linear warm-up from 0 to the peak rate; at most `steps`.
    public var warmupSteps: Int
    public var batchSize: Int
    public var gradAccumulation: Int
    /// Sequences are cut to this many tokens (prompt and completion, chat template included).
    public var maxLength: Int
    /// A checkpoint every this many optimizer steps (DESIGN.md: default 10).
    public var checkpointInterval: Int
    /// Nil disables early stopping (`"early_stopping": null` in a file).
    public var earlyStopping: EarlyStopping?
    /// OpenBLAS threads of the train and eval steps: `auto` (every core of the machine that claims the step,
    /// recorded by the step) or a fixed count. 1 and 2 threads give different bits (DESIGN.md).
    public var blasThreads: BLASThreadCount
    /// The turn format, or nil for the base model's chat template (which a model without one cannot use).
    public var chatFormat: ChatFormat?
    /// How the frozen base model is kept while training and scoring; written into both steps' inputs.
    public var baseWeights: BaseWeights
    /// How the forward passes of both steps multiply a base kept quantized; written into both steps' inputs.
    public var forwardProducts: ForwardProductsChoice
    /// `init`: what the candidate starts from; nil in a step planned before the field, which trained from zero.
    public var initFrom: TrainInit?

    /// The training numbers default to `TrainingDefaults` (shared with `adapt train`); the rest are the pipeline's own.
    public init(steps: Int = TrainingDefaults.steps, rank: Int = TrainingDefaults.rank, alpha: Double = TrainingDefaults.alpha,
                dropout: Double = TrainingDefaults.dropout, targets: [LoRATarget] = [.attnQ, .attnK, .attnV, .attnOutput],
                learningRate: Double = TrainingDefaults.learningRate, schedule: LearningRateSchedule = .cosine,
                warmupSteps: Int = TrainingDefaults.warmupSteps, batchSize: Int = TrainingDefaults.batchSize,
                gradAccumulation: Int = 1, maxLength: Int = 256, checkpointInterval: Int = 10,
                earlyStopping: EarlyStopping? = EarlyStopping(), blasThreads: BLASThreadCount = .auto, chatFormat: ChatFormat? = nil,
                baseWeights: BaseWeights = .quantized, forwardProducts: ForwardProductsChoice = .int8,
                initFrom: TrainInit? = .active) {
        self.initFrom = initFrom
        self.chatFormat = chatFormat
        self.baseWeights = baseWeights
        self.forwardProducts = forwardProducts
        self.steps = steps
        self.rank = rank
        self.alpha = alpha
        self.dropout = dropout
        self.targets = targets
        self.learningRate = learningRate
        self.schedule = schedule
        self.warmupSteps = warmupSteps
        self.batchSize = batchSize
        self.gradAccumulation = gradAccumulation
        self.maxLength = maxLength
        self.checkpointInterval = checkpointInterval
        self.earlyStopping = earlyStopping
        self.blasThreads = blasThreads
    }

    enum CodingKeys: String, CodingKey {
        case steps, rank, alpha, dropout, targets, schedule
        case learningRate = "learning_rate", warmupSteps = "warmup_steps", batchSize = "batch_size"
        case gradAccumulation = "grad_accumulation", maxLength = "max_length"
        case checkpointInterval = "checkpoint_interval", earlyStopping = "early_stopping", blasThreads = "blas_threads"
        case chatFormat = "chat_format", baseWeights = "base_weights", forwardProducts = "forward_products"
        case initFrom = "init"
    }

    /// Decodes a step input or a run's resolved definition. Without `base_weights` it was planned before the
    /// field existed, when both steps kept the base in f32: it reads as `f32`, so those runs replay as recorded.
    /// Without `forward_products`, likewise `sgemm`.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(steps: try c.decode(Int.self, forKey: .steps), rank: try c.decode(Int.self, forKey: .rank),
                  alpha: try c.decode(Double.self, forKey: .alpha), dropout: try c.decode(Double.self, forKey: .dropout),
                  targets: try c.decode([LoRATarget].self, forKey: .targets),
                  learningRate: try c.decode(Double.self, forKey: .learningRate),
                  schedule: try c.decode(LearningRateSchedule.self, forKey: .schedule),
                  warmupSteps: try c.decode(Int.self, forKey: .warmupSteps), batchSize: try c.decode(Int.self, forKey: .batchSize),
                  gradAccumulation: try c.decode(Int.self, forKey: .gradAccumulation),
                  maxLength: try c.decode(Int.self, forKey: .maxLength),
                  checkpointInterval: try c.decode(Int.self, forKey: .checkpointInterval),
                  earlyStopping: try c.decodeIfPresent(EarlyStopping.self, forKey: .earlyStopping),
                  blasThreads: try c.decode(BLASThreadCount.self, forKey: .blasThreads),
                  chatFormat: try c.decodeIfPresent(ChatFormat.self, forKey: .chatFormat),
                  baseWeights: try c.decodeIfPresent(BaseWeights.self, forKey: .baseWeights) ?? .f32,
                  forwardProducts: try c.decodeIfPresent(ForwardProductsChoice.self, forKey: .forwardProducts) ?? .sgemm,
                  initFrom: try c.decodeIfPresent(TrainInit.self, forKey: .initFrom))
    }

    /// What the candidate starts from: a step planned before `init` existed trained from zero.
    public var initialWeights: TrainInit { initFrom ?? .fresh }

    /// Writes `early_stopping: null` rather than leaving the key out, so a resolved file shows it.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(steps, forKey: .steps)
        try c.encode(rank, forKey: .rank)
        try c.encode(alpha, forKey: .alpha)
        try c.encode(dropout, forKey: .dropout)
        try c.encode(targets, forKey: .targets)
        try c.encode(learningRate, forKey: .learningRate)
        try c.encode(schedule, forKey: .schedule)
        try c.encode(warmupSteps, forKey: .warmupSteps)
        try c.encode(batchSize, forKey: .batchSize)
        try c.encode(gradAccumulation, forKey: .gradAccumulation)
        try c.encode(maxLength, forKey: .maxLength)
        try c.encode(checkpointInterval, forKey: .checkpointInterval)
        if let earlyStopping { try c.encode(earlyStopping, forKey: .earlyStopping) } else { try c.encodeNil(forKey: .earlyStopping) }
        try c.encode(blasThreads, forKey: .blasThreads)
        // Written only when set: a pipeline that uses the model's template keeps the digest (and its runs the
        // step inputs) it had before the field existed, so their replays stay equal.
        try c.encodeIfPresent(chatFormat, forKey: .chatFormat)
        // Always written: the default changed from f32 to quantized, so a pipeline's digest says which it means.
        try c.encode(baseWeights, forKey: .baseWeights)
        // Always written too: absent means the sgemm of the runs planned before it.
        try c.encode(forwardProducts, forKey: .forwardProducts)
        // Written whenever set (every pipeline read from a file sets it): absent means the runs before it, from zero.
        try c.encodeIfPresent(initFrom, forKey: .initFrom)
    }
}

/// The test the gate's report carries, on differences d = candidate NLL − incumbent NLL per held-out example
/// (the Evaluation module's convention, used end to end: a better candidate has negative differences).
///
/// The gate's verdict does not depend on it: `better` and `worse` come from both one-sided tests.
public enum TestAlternative: String, Sendable, Codable, CaseIterable {
    /// The candidate is better: its NLL is lower, so d tends to be negative.
    case less
    case greater
    case twoSided = "two-sided"
}

/// What the signed-rank test does with zero differences (SciPy's `zero_method` names).
public enum ZeroMethod: String, Sendable, Codable, CaseIterable {
    /// Drop zero differences before ranking (Wilcoxon 1945).
    case wilcox
    /// Rank zeros, then drop their ranks (Pratt 1959).
    case pratt
    /// Rank zeros and split their ranks between the positive and negative sums.
    case zsplit
}

/// Parameters of the eval step: the promotion gate.
public struct EvalParameters: Sendable, Equatable, Codable {
    /// Significance level of the one-sided Wilcoxon signed-rank test.
    public var alpha: Double
    /// Fewer held-out pairs than this give "not enough evidence" without a test.
    public var minPairs: Int
    public var alternative: TestAlternative
    public var zeroMethod: ZeroMethod
    /// What a `worse` outcome does to the sources the eval step blames.
    public var onWorse: OnWorse
    /// `min_effect`: the smallest median held-out improvement, in nats of mean token NLL, that can be `better`
    /// (Evaluation's `PromotionGate.minimumEffect` says why nats). nil in a step planned before the field: no minimum.
    public var minEffect: Double?
    /// `canary`: the forgetting guard, nil when switched off (null in a file) or in a step planned before it. On by
    /// default since it has a fluency part: measured on the default model it passes good style adapters and refuses
    /// memorising ones (docs/gate-and-registry.md, "Forgetting guard"); the margin alone could not.
    public var canary: CanaryGuard?

    /// The default minimum effect. Measured on the default model and the example lineage's 23 held-out pairs: a
    /// 30-step adapter improves on the base by a median 1.85 nats, while two such adapters trained with different
    /// seeds differ by a median 0.001 (p 0.55). 0.01 nats (each token about 1 % likelier) is ten times that rerun
    /// noise and well under what a promoted night gains (docs/gate-and-registry.md, "Minimum effect").
    public static let defaultMinEffect = 0.01

    public init(alpha: Double = 0.05, minPairs: Int = 10, alternative: TestAlternative = .less,
                zeroMethod: ZeroMethod = .wilcox, onWorse: OnWorse = .keep, minEffect: Double? = EvalParameters.defaultMinEffect,
                canary: CanaryGuard? = CanaryGuard()) {
        self.alpha = alpha
        self.minPairs = minPairs
        self.alternative = alternative
        self.zeroMethod = zeroMethod
        self.onWorse = onWorse
        self.minEffect = minEffect
        self.canary = canary
    }

    enum CodingKeys: String, CodingKey {
        case alpha, alternative, canary
        case minPairs = "min_pairs", zeroMethod = "zero_method", onWorse = "on_worse", minEffect = "min_effect"
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(alpha: try c.decode(Double.self, forKey: .alpha), minPairs: try c.decode(Int.self, forKey: .minPairs),
                  alternative: try c.decode(TestAlternative.self, forKey: .alternative),
                  zeroMethod: try c.decode(ZeroMethod.self, forKey: .zeroMethod),
                  // An eval step planned before the setting existed kept every worse night's data.
                  onWorse: try c.decodeIfPresent(OnWorse.self, forKey: .onWorse) ?? .keep,
                  // And one planned before these two had no minimum effect and no forgetting guard.
                  minEffect: try c.decodeIfPresent(Double.self, forKey: .minEffect),
                  canary: try c.decodeIfPresent(CanaryGuard.self, forKey: .canary))
    }

    /// `canary: null` is written, not left out: absent means a step planned before the guard existed.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(alpha, forKey: .alpha)
        try c.encode(minPairs, forKey: .minPairs)
        try c.encode(alternative, forKey: .alternative)
        try c.encode(zeroMethod, forKey: .zeroMethod)
        try c.encode(onWorse, forKey: .onWorse)
        try c.encodeIfPresent(minEffect, forKey: .minEffect)
        if let canary { try c.encode(canary, forKey: .canary) } else { try c.encodeNil(forKey: .canary) }
    }
}

/// `eval.on_worse`: what happens to the examples the eval step's source attribution blames when the candidate
/// comes out `worse`.
public enum OnWorse: String, Sendable, Codable, CaseIterable {
    /// Nothing: the examples stay sampleable (the behaviour before the setting existed).
    case keep
    /// The blamed sources' training examples are quarantined until released (`adapt data release`) or erased.
    case quarantine
}
