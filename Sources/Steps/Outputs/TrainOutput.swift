import AdaptCore
import Pipelines

/// The adapter the train step made and how training went.
public struct TrainOutput: StepResult, Equatable {
    public static let kind = StepKind.train

    public struct Inputs: Codable, Sendable, Equatable {
        public var baseModel: Digest
        public var trainSnapshot: Digest
        /// The adapter the candidate started from; left out for one trained from zero.
        public var weightsParent: Digest?
        /// The BLAS threads a `blas_threads: auto` step resolved (`StepThreads`): what its resume and replay run at.
        /// Left out when the input fixed the count.
        public var blasThreads: Int?

        public init(baseModel: Digest, trainSnapshot: Digest, weightsParent: Digest? = nil, blasThreads: Int? = nil) {
            self.baseModel = baseModel
            self.trainSnapshot = trainSnapshot
            self.weightsParent = weightsParent
            self.blasThreads = blasThreads
        }

        enum CodingKeys: String, CodingKey {
            case baseModel = "base_model", trainSnapshot = "train_snapshot", weightsParent = "weights_parent"
            case blasThreads = "blas_threads"
        }
    }

    /// What the candidate started from (`train.init`): `from` the weights parent (`lineage/vN`), or null with the
    /// reason it trained from zero.
    public struct Initialization: Codable, Sendable, Equatable {
        /// `active_version` (started from it), `init_fresh` (the pipeline says so), `no_active_version`, or
        /// `incompatible` (then `mismatch` names the field: `rank 16 (this run: 8)`).
        public enum Reason: String, Codable, Sendable {
            case activeVersion = "active_version", initFresh = "init_fresh", noActiveVersion = "no_active_version"
            case incompatible
        }

        public var from: String?
        public var reason: Reason
        public var mismatch: String?

        public init(from: String?, reason: Reason, mismatch: String? = nil) {
            self.from = from
            self.reason = reason
            self.mismatch = mismatch
        }

        // `from` is an explicit null when training from zero, so the shape never changes.
        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(from, forKey: .from)
            try c.encode(reason, forKey: .reason)
            try c.encodeIfPresent(mismatch, forKey: .mismatch)
        }

        enum CodingKeys: String, CodingKey { case from, reason, mismatch }
    }

    /// One early-stopping evaluation.
    public struct ValidationLoss: Codable, Sendable, Equatable {
        public var step: Int
        public var loss: Double
    }

    /// The SHA-256 of the adapter file, as `adapt train` reports it.
    public var adapterDigest: Digest
    /// The adapter's name in the blob store (the same SHA-256 of the whole file).
    public var adapterBlob: Digest
    public var steps: Int
    /// The training loss of every step.
    public var losses: [Double]
    public var stoppedEarly: Bool
    public var validationLosses: [ValidationLoss]
    /// The step of the best validation loss; nil without early stopping.
    public var bestStep: Int?
    public var trainingExamples: Int
    /// Examples of tonight's sample kept aside for early stopping.
    public var validationExamples: Int
    public var truncatedExamples: Int
    public var droppedExamples: Int
    public var trainingTokens: Int
    public var configDigest: Digest
    public var chatConvention: String
    public var inputs: Inputs
    /// nil for a run planned before `train.init` existed (it trained from zero and records nothing).
    public var initialization: Initialization?
    /// True when no step improved the validation loss of the starting weights (measured at step 0): the adapter
    /// holds them unchanged and promote registers nothing. nil in runs planned before `train.init`.
    public var keptParent: Bool?

    enum CodingKeys: String, CodingKey {
        case steps, losses, inputs
        case initialization = "init", keptParent = "kept_parent"
        case adapterDigest = "adapter_digest", adapterBlob = "adapter_blob", stoppedEarly = "stopped_early"
        case validationLosses = "validation_losses", bestStep = "best_step", trainingExamples = "training_examples"
        case validationExamples = "validation_examples", truncatedExamples = "truncated_examples"
        case droppedExamples = "dropped_examples", trainingTokens = "training_tokens", configDigest = "config_digest"
        case chatConvention = "chat_convention"
    }

    public init(adapterDigest: Digest, adapterBlob: Digest, steps: Int, losses: [Double], stoppedEarly: Bool,
                validationLosses: [ValidationLoss], bestStep: Int?, trainingExamples: Int, validationExamples: Int,
                truncatedExamples: Int, droppedExamples: Int, trainingTokens: Int, configDigest: Digest,
                chatConvention: String, inputs: Inputs, initialization: Initialization? = nil, keptParent: Bool? = nil) {
        self.initialization = initialization
        self.keptParent = keptParent
        self.adapterDigest = adapterDigest
        self.adapterBlob = adapterBlob
        self.steps = steps
        self.losses = losses
        self.stoppedEarly = stoppedEarly
        self.validationLosses = validationLosses
        self.bestStep = bestStep
        self.trainingExamples = trainingExamples
        self.validationExamples = validationExamples
        self.truncatedExamples = truncatedExamples
        self.droppedExamples = droppedExamples
        self.trainingTokens = trainingTokens
        self.configDigest = configDigest
        self.chatConvention = chatConvention
        self.inputs = inputs
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            adapterDigest: try c.decode(Digest.self, forKey: .adapterDigest), adapterBlob: try c.decode(Digest.self, forKey: .adapterBlob),
            steps: try c.decode(Int.self, forKey: .steps), losses: try c.decode([Double].self, forKey: .losses),
            stoppedEarly: try c.decode(Bool.self, forKey: .stoppedEarly),
            validationLosses: try c.decode([ValidationLoss].self, forKey: .validationLosses),
            bestStep: try c.decode(Int?.self, forKey: .bestStep),
            trainingExamples: try c.decode(Int.self, forKey: .trainingExamples),
            validationExamples: try c.decode(Int.self, forKey: .validationExamples),
            truncatedExamples: try c.decode(Int.self, forKey: .truncatedExamples),
            droppedExamples: try c.decode(Int.self, forKey: .droppedExamples),
            trainingTokens: try c.decode(Int.self, forKey: .trainingTokens),
            configDigest: try c.decode(Digest.self, forKey: .configDigest),
            chatConvention: try c.decode(String.self, forKey: .chatConvention), inputs: try c.decode(Inputs.self, forKey: .inputs),
            initialization: try c.decodeIfPresent(Initialization.self, forKey: .initialization),
            keptParent: try c.decodeIfPresent(Bool.self, forKey: .keptParent))
    }

    // By hand so that `best_step` is an explicit null without early stopping, as the step always wrote it.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(adapterDigest, forKey: .adapterDigest)
        try c.encode(adapterBlob, forKey: .adapterBlob)
        try c.encode(steps, forKey: .steps)
        try c.encode(losses, forKey: .losses)
        try c.encode(stoppedEarly, forKey: .stoppedEarly)
        try c.encode(validationLosses, forKey: .validationLosses)
        try c.encode(bestStep, forKey: .bestStep)
        try c.encode(trainingExamples, forKey: .trainingExamples)
        try c.encode(validationExamples, forKey: .validationExamples)
        try c.encode(truncatedExamples, forKey: .truncatedExamples)
        try c.encode(droppedExamples, forKey: .droppedExamples)
        try c.encode(trainingTokens, forKey: .trainingTokens)
        try c.encode(configDigest, forKey: .configDigest)
        try c.encode(chatConvention, forKey: .chatConvention)
        try c.encode(inputs, forKey: .inputs)
        try c.encodeIfPresent(initialization, forKey: .initialization)
        try c.encodeIfPresent(keptParent, forKey: .keptParent)
    }
}
