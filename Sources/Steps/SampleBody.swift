import AdaptCore
import Pipelines
import Registry
import ReplayBuffer
import Storage

/// The sample step: tonight's training set and the lineage's held-out set as dataset snapshot blobs.
///
/// Which limits apply: the lineage's stored policy (`adapt data policy`) decides the held-out split (pinned
/// when an example is stored), topped up to the run's `eval.min_pairs` under the rule its manifest records
/// (`held_out_rule`: a run planned before the rule existed replays with the old one); the pipeline's `sample_size`, `max_tokens_per_night` and
/// `max_uses_per_example` can only tighten the lineage's budget for the night's sample (`SamplePolicy`). Same seed, night and buffer:
/// the same snapshot digests (ReplayBuffer's `SampleStep`).
///
/// Fencing: the body draws the sample without recording it and writes the snapshot blobs; the privacy
/// budget's uses and the held-out top-up are written by `finalize`, in the job's fenced completion
/// transaction, which draws again and must get the same sample. A worker that lost its lease spends no
/// budget; its snapshot blobs are referenced by nothing.
///
/// Weights parent (issue 42): when the train step starts from the active version (`train_init: active` in this
/// step's input), the sample step fixes which one, once, in its output (`weights_parent`: `{version,
/// adapter_blob}`, or null with no active version): the train step reads it from here, and a replay reads the
/// recorded one, so a resumed or replayed train step starts from the same weights whatever the registry says
/// since. A refused candidate never becomes active, so it is never a weights parent.
public enum SampleBody {
    public static func run(_ context: StepContext) throws -> StepOutcome {
        let environment = context.environment
        let common = try PlannedInput(context.input)
        let sample = try PlannedInput.parameters(SampleParameters.self, from: context.input)
        let budget = try PlannedInput.parameters(PrivacyBudget.self, from: context.input)
        let store = try ReplayStore(database: environment.database, clock: environment.clock)
        let plan = try SampleStep.plan(
            store: store, blobs: environment.blobs, lineage: common.lineage, seed: common.seed,
            night: common.night.description,
            policy: SamplePolicy(maxExamples: sample.sampleSize, maxTokens: budget.maxTokensPerNight,
                                 maxUses: budget.maxUsesPerExample, heldOutRule: try context.heldOutRule(),
                                 gateMinimum: context.gateMinimumPairs(), order: try order(context)))
        let report = plan.report
        let weightsParent = try self.weightsParent(context, lineage: common.lineage)
        let finalize: @Sendable (any SQLConnection) throws -> Void = { db in
            guard try SampleStep.apply(plan.request, in: db) == report else {
                try SampleStep.discardErased(plan, store: store, blobs: environment.blobs)
                throw StepError.bufferChanged(step: context.name, lineage: report.lineage)
            }
            environment.log("sampled \(report.trainExamples) training and \(report.heldOutExamples) held-out example(s)")
        }
        return .completed(StepOutput(SampleOutput(report: report, weightsParent: weightsParent), finalize: finalize))
    }

    /// The order the step's input records (`LaterRule.newExamplesFirst`); a run planned before it draws one
    /// weighted sample over every eligible example, and replays that way.
    static func order(_ context: StepContext) throws -> SampleOrder {
        let rule = LaterRule.newExamplesFirst
        if let problem = rule.problem(in: context.input) {
            throw StepError.invalidInput(step: context.name, kind: StepKind.sample.rawValue, problems: [problem])
        }
        return rule.holds(for: context.input) ? .newFirst : .weighted
    }

    /// The night's weights parent: nil (the field left out) for a run planned before warm starts, `.some(nil)`
    /// when it trains from zero; in a replay, the recorded one.
    static func weightsParent(_ context: StepContext, lineage: String) throws -> SampleOutput.WeightsParent?? {
        guard let choice = context.input[TrainInit.sampleField] else { return nil }
        if let recorded = try context.recordedOutput(SampleOutput.self) { return recorded.weightsParent }
        guard choice.stringValue == TrainInit.active.rawValue, let name = ShortIdentifier(lineage) else { return .some(nil) }
        let registry = try AdapterRegistry(connection: context.environment.database, blobs: context.environment.blobs)
        guard let active = try registry.active(lineage: name) else { return .some(nil) }
        return .some(SampleOutput.WeightsParent(version: active.reference.description, adapterBlob: active.adapterDigest))
    }
}
