import AdaptCore

/// `prompt_markers` of the train and eval steps' inputs: what the text of a control token (`<|im_start|>`) inside
/// an example's own text becomes when the example is tokenized.
///
/// `plan` writes `text`: text from data is always tokenised as text, and only the chat template adds special
/// tokens (DESIGN.md, "Privacy"). A step planned before the field existed has none: its prompts were tokenized
/// with such text parsed as the control token, and it keeps that rule so that the run replays equal.
public enum PromptMarkersRule {
    public static let field = "prompt_markers"
    /// The one value a step input may hold.
    public static let text = "text"

    /// The problem with `input`'s field, or nil when it is absent or `text`.
    public static func problem(in input: JSONValue) -> String? {
        guard let value = input[field], value.stringValue != text else { return nil }
        return "\(field) must be \"\(text)\" (a step planned before the field existed has none), got \(PipelineReader.render(value))"
    }
}
