/// What becomes of a control token's text (such as `<|im_start|>`) inside a message's own text when a
/// formatted conversation is tokenized.
///
/// Text from data is always tokenized as text: only the chat template adds special tokens (`.text`). Runs
/// planned before that rule was recorded in their step inputs (`prompt_markers`) parsed such text in prompts and
/// conversation context as the control token (`.parsed`); they keep that rule so that they replay equal.
/// Completions and assistant replies were tokenized as text under both.
public enum PromptMarkers: String, Sendable, CaseIterable {
    /// Markers in a message stay text; only the template's own become control tokens.
    case text
    /// Markers anywhere in the formatted prompt become control tokens (the rule before `text`).
    case parsed
}
