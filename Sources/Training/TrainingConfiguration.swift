import AdaptCore
import Adapters

/// Early stopping on held-out loss: evaluate every `every` steps, stop after `patience` evaluations in a row
/// that did not improve the best loss by more than `minDelta`, and keep the best weights.
///
/// `evaluatesAtStart`: evaluate the starting weights too (step 0), before the first step, so a run in which no step
/// improves on them hands back its starting weights (a warm start keeps its parent: "no change" is a possible
/// night). Encoded only when set, so the configurations (and digests) of runs without it are what they were.
public struct EarlyStopping: Sendable, Equatable, Codable {
    public var every: Int
    public var patience: Int
    public var minDelta: Double
    public var evaluatesAtStart: Bool

    public init(every: Int = TrainingDefaults.earlyStoppingEvery, patience: Int = TrainingDefaults.earlyStoppingPatience,
                minDelta: Double = 0, evaluatesAtStart: Bool = false) {
        self.every = every
        self.patience = patience
        self.minDelta = minDelta
        self.evaluatesAtStart = evaluatesAtStart
    }

    enum CodingKeys: String, CodingKey { case every, patience, minDelta, evaluatesAtStart }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(every: try c.decode(Int.self, forKey: .every), patience: try c.decode(Int.self, forKey: .patience),
                  minDelta: try c.decode(Double.self, forKey: .minDelta),
                  evaluatesAtStart: try c.decodeIfPresent(Bool.self, forKey: .evaluatesAtStart) ?? false)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(every, forKey: .every)
        try c.encode(patience, forKey: .patience)
        try c.encode(minDelta, forKey: .minDelta)
        if evaluatesAtStart { try c.encode(true, forKey: .evaluatesAtStart) }
    }
}

/// Every setting that decides the numbers a run computes, plus how often it checkpoints.
///
/// All fields except `checkpointEvery` take part in the configuration digest and in the checks a checkpoint
/// must pass before a run resumes from it: checkpointing more or less often changes no number.
public struct TrainingConfiguration: Sendable, Equatable, Codable {
    /// Optimizer steps in the run.
    public var steps: Int
    /// Sequences per micro-batch.
    public var batchSize: Int
    /// Micro-batches whose gradients are summed before one optimizer step.
    public var gradientAccumulation: Int
    /// The peak learning rate.
    public var learningRate: Double
    public var schedule: LearningRateSchedule
    public var optimizer: AdamW
    /// Seed of every random stream of the run (data order, dropout, LoRA initialisation).
    public var seed: UInt64
    /// Sequences longer than this many tokens are truncated.
    public var maxLength: Int
    /// BLAS threads: changes results in the last bits, so it is fixed per run and recorded.
    public var threads: Int
    public var adapter: AdapterSettings
    /// nil: no held-out evaluation, the last weights are the result.
    public var earlyStopping: EarlyStopping?
    /// A checkpoint every this many optimizer steps (and at the end).
    public var checkpointEvery: Int

    public init(steps: Int = 100, batchSize: Int = 1, gradientAccumulation: Int = 1, learningRate: Double = 1e-4,
                schedule: LearningRateSchedule = .cosine(warmup: 10, floor: 0.1), optimizer: AdamW = AdamW(),
                seed: UInt64 = 0, maxLength: Int = 512, threads: Int = 1, adapter: AdapterSettings = AdapterSettings(),
                earlyStopping: EarlyStopping? = nil, checkpointEvery: Int = 10) {
        self.steps = steps
        self.batchSize = batchSize
        self.gradientAccumulation = gradientAccumulation
        self.learningRate = learningRate
        self.schedule = schedule
        self.optimizer = optimizer
        self.seed = seed
        self.maxLength = maxLength
        self.threads = threads
        self.adapter = adapter
        self.earlyStopping = earlyStopping
        self.checkpointEvery = checkpointEvery
    }

    public func validate() throws {
        func require(_ ok: Bool, _ field: String, _ reason: String) throws {
            if !ok { throw TrainingError.invalidConfiguration(field: field, reason: reason) }
        }
        try require(steps >= 1, "steps", "must be at least 1, got \(steps)")
        try require(batchSize >= 1, "batch size", "must be at least 1, got \(batchSize)")
        try require(gradientAccumulation >= 1, "gradient accumulation", "must be at least 1, got \(gradientAccumulation)")
        try require(learningRate > 0 && learningRate.isFinite, "learning rate", "must be positive, got \(learningRate)")
        try require(maxLength >= 2, "max length", "must be at least 2 tokens, got \(maxLength)")
        try require(threads >= 1, "threads", "must be at least 1, got \(threads)")
        try require(checkpointEvery >= 1, "checkpoint every", "must be at least 1, got \(checkpointEvery)")
        try require(adapter.rank >= 1, "rank", "must be at least 1, got \(adapter.rank)")
        try require(AdapterSettings.isPlausible(alpha: Double(adapter.alpha)), "alpha",
                    "must be above 0 and at most \(AdapterSettings.maximumAlpha), got \(adapter.alpha)")
        try require(adapter.dropout >= 0 && adapter.dropout < 1, "dropout", "must be in [0, 1), got \(adapter.dropout)")
        try require(!adapter.targets.isEmpty, "targets", "must name at least one projection")
        if let early = earlyStopping {
            try require(early.every >= 1, "evaluate every", "must be at least 1, got \(early.every)")
            try require(early.patience >= 1, "patience", "must be at least 1, got \(early.patience)")
            try require(early.minDelta >= 0, "min delta", "must not be negative, got \(early.minDelta)")
        }
        try schedule.validate()
        try optimizer.validate()
    }

    /// The settings that decide the numbers, as canonical JSON: `checkpointEvery` left out.
    public var numericSettings: JSONValue {
        var copy = self
        copy.checkpointEvery = 1
        guard case var .object(fields) = (try? JSON.decode(JSONValue.self, from: JSON.canonical(copy), context: "configuration")) ?? .null else {
            preconditionFailure("a configuration always encodes to a JSON object")
        }
        fields.removeValue(forKey: "checkpointEvery")
        return .object(fields)
    }

    /// SHA-256 of the canonical JSON of every setting but `checkpointEvery` (hashed from the encoded struct, so
    /// a seed above 2⁵³ keeps all its bits): equal for two runs that must compute the same numbers.
    public var digest: Digest {
        var copy = self
        copy.checkpointEvery = 0
        return JSON.digest(copy)
    }

    /// The first setting in which `stored` (from a checkpoint) differs from `self`, as (name, stored, current,
    /// remedy), or nil when a run with `self` may resume from it.
    public func firstDifference(from stored: TrainingConfiguration) -> (field: String, stored: String, current: String, remedy: String)? {
        func flag(_ option: String, _ value: String) -> String { "pass --\(option) \(value) or start fresh" }
        let fresh = "start fresh (the setting is not a command-line option)"
        var checks: [(String, String, String, String)] = [
            ("rank", "\(stored.adapter.rank)", "\(adapter.rank)", flag("rank", "\(stored.adapter.rank)")),
            ("alpha", "\(stored.adapter.alpha)", "\(adapter.alpha)", flag("alpha", "\(stored.adapter.alpha)")),
            ("dropout", "\(stored.adapter.dropout)", "\(adapter.dropout)", flag("dropout", "\(stored.adapter.dropout)")),
            ("targets", stored.adapter.targets.joined(separator: ","), adapter.targets.joined(separator: ","),
             flag("targets", stored.adapter.targets.joined(separator: ","))),
            ("steps", "\(stored.steps)", "\(steps)", flag("steps", "\(stored.steps)")),
            ("batch size", "\(stored.batchSize)", "\(batchSize)", flag("batch-size", "\(stored.batchSize)")),
            ("gradient accumulation", "\(stored.gradientAccumulation)", "\(gradientAccumulation)",
             flag("grad-accum", "\(stored.gradientAccumulation)")),
            ("learning rate", "\(stored.learningRate)", "\(learningRate)", flag("lr", "\(stored.learningRate)")),
            ("schedule", stored.schedule.summary, schedule.summary, fresh),
            ("seed", "\(stored.seed)", "\(seed)", flag("seed", "\(stored.seed)")),
            ("max length", "\(stored.maxLength)", "\(maxLength)", flag("max-length", "\(stored.maxLength)")),
            ("threads", "\(stored.threads)", "\(threads)", flag("threads", "\(stored.threads)")),
        ]
        checks.append(("optimizer", JSON.canonicalString(stored.optimizer), JSON.canonicalString(optimizer), fresh))
        checks.append(("early stopping", stored.earlyStopping.map { JSON.canonicalString($0) } ?? "none",
                       earlyStopping.map { JSON.canonicalString($0) } ?? "none", fresh))
        for (field, old, new, remedy) in checks where old != new {
            return (field, old, new, remedy)
        }
        // Anything not listed above (a field added later) still cannot slip through.
        if stored.digest != digest {
            return ("configuration digest", stored.digest.short, digest.short, fresh)
        }
        return nil
    }
}
