import AdaptCore
import Pipelines
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
                                 gateMinimum: context.gateMinimumPairs()))
        let report = plan.report
        let finalize: @Sendable (any SQLConnection) throws -> Void = { db in
            guard try SampleStep.apply(plan.request, in: db) == report else {
                try SampleStep.discardErased(plan, store: store, blobs: environment.blobs)
                throw StepError.bufferChanged(step: context.name, lineage: report.lineage)
            }
            environment.log("sampled \(report.trainExamples) training and \(report.heldOutExamples) held-out example(s)")
        }
        return .completed(StepOutput(report as SampleOutput, finalize: finalize))
    }
}
