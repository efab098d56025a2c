import AdaptCore
import Pipelines
import ReplayBuffer

extension StepContext {
    /// The held-out rule the run's manifest records (`held_out_rule`, written by the planner); a run planned
    /// before the field existed used `.halfCapped`, and replays with it.
    func heldOutRule() throws -> HeldOutSplit.Rule {
        guard let value = manifest["held_out_rule"] else { return .halfCapped }
        guard let number = value.intValue, let rule = HeldOutSplit.Rule(rawValue: number) else {
            throw StepError.unknownHeldOutRule(JSON.canonicalString(value))
        }
        return rule
    }

    /// The pairs the run's gate asks for: `eval.min_pairs` of the resolved pipeline in the manifest, or the
    /// default pipeline's when the run has no eval parameters.
    func gateMinimumPairs() -> Int {
        manifest["definition"]?["eval"]?["min_pairs"]?.intValue ?? EvalParameters().minPairs
    }
}
