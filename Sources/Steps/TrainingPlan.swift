import AdaptCore
import Adapters
import Model
import Pipelines
import Training

/// The train step's parameters from a pipeline, as the Training module's configuration.
///
/// Schedules: the pipeline's `constant` (after warm-up) is the trainer's linear warm-up then constant;
/// `cosine` is warm-up then a cosine down to 0.1 × the peak (the floor `adapt train` uses), `linear` warm-up then
/// a straight line down to the same floor.
public struct TrainingPlan: Sendable {
    public let parameters: TrainParameters
    public let device: DevicePolicy
    public let lora: LoRAConfig
    public let configuration: TrainingConfiguration
    /// `chat_format` of the train input: nil formats examples through the base model's template.
    public let chatFormat: ChatConvention?

    /// `threads`: the step's resolved count (`StepThreads`); nil takes the input's fixed count, or for `auto` every
    /// core this process may use.
    public init(input: JSONValue, threads: Int? = nil) throws {
        let common = try PlannedInput(input)
        parameters = try PlannedInput.parameters(TrainParameters.self, from: input)
        device = try PlannedInput.parameters(DevicePolicy.self, from: input["device"] ?? .object([:]))
        lora = LoRAConfig(rank: parameters.rank, alpha: Float(parameters.alpha), dropout: Float(parameters.dropout),
                          targets: LoRATargets.projections(parameters.targets))
        let schedule: Training.LearningRateSchedule
        let plannedWithInit = parameters.initFrom != nil
        switch parameters.schedule {
        case .constant: schedule = parameters.warmupSteps > 0 ? .linearWarmup(warmup: parameters.warmupSteps) : .constant
        case .cosine: schedule = .cosine(warmup: parameters.warmupSteps, floor: 0.1)
        case .linear: schedule = .linearDecay(warmup: parameters.warmupSteps, floor: 0.1)
        }
        var configuration = TrainingConfiguration(
            steps: parameters.steps, batchSize: parameters.batchSize, gradientAccumulation: parameters.gradAccumulation,
            learningRate: parameters.learningRate, schedule: schedule, seed: common.seed, maxLength: parameters.maxLength,
            threads: threads ?? parameters.blasThreads.fixedCount ?? StepThreads.available(), adapter: AdapterSettings(),
            // Runs planned with `init` measure their starting weights too (step 0): a night may keep them.
            earlyStopping: parameters.earlyStopping.map {
                Training.EarlyStopping(every: $0.everySteps, patience: $0.patience, evaluatesAtStart: plannedWithInit)
            },
            checkpointEvery: parameters.checkpointInterval)
        configuration.optimizer.decaysTowardWeightsParent = LaterRule.weightDecayTowardParent.holds(for: input)
        self.configuration = configuration
        chatFormat = try Self.chatConvention(parameters.chatFormat)
        var check = configuration
        check.adapter = lora.settings
        try check.validate()
    }

    /// The Model convention a pipeline's `chat_format` names.
    static func chatConvention(_ format: ChatFormat?) throws -> ChatConvention? {
        guard let format else { return nil }
        guard let convention = ChatConvention(rawValue: format.rawValue) else {
            preconditionFailure("ChatFormat.\(format) has no ChatConvention of the same name")
        }
        return convention
    }

    /// Early stopping measures a validation slice of tonight's sample: its last eighth (at least one example),
    /// which is then not trained on tonight. The lineage's held-out set is never used for it, so the gate's
    /// examples stay unseen by every decision of the run. A run planned with `train.init` (`smallSamples`) keeps a
    /// slice from 2 examples up, so a night of a few examples can still keep its starting weights; one planned
    /// before had none under 8 examples, and replays that way.
    public static func validationCount(examples: Int, earlyStopping: Bool, smallSamples: Bool = false) -> Int {
        guard earlyStopping, examples >= (smallSamples ? 2 : 8) else { return 0 }
        return max(1, examples / 8)
    }
}
