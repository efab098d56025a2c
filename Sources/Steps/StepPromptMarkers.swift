import AdaptCore
import Model
import Pipelines

/// The rule a train or eval step tokenizes prompts by, from its input's `prompt_markers` (`LaterRule.promptMarkersAsText`):
/// `text` in every step planned since the field existed; absent in the steps planned before, which parsed
/// control-token text in prompts as the token and keep doing so, so that their runs replay equal.
enum StepPromptMarkers {
    /// Throws `StepError.invalidInput` for a value other than `text`.
    static func rule(input: JSONValue, step: String, kind: String) throws -> PromptMarkers {
        let rule = LaterRule.promptMarkersAsText
        if let problem = rule.problem(in: input) {
            throw StepError.invalidInput(step: step, kind: kind, problems: [problem])
        }
        return rule.holds(for: input) ? .text : .parsed
    }
}
