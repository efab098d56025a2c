import AdaptCore

/// A rule a step gained after runs had already been recorded, marked by a field `plan` writes into the step's
/// input with its one value. A step planned before the rule has no such field and keeps the old behaviour, so
/// that its run replays equal; any other value is refused (`StepInputCheck`) before a body reads it.
public struct LaterRule: Sendable {
    public let field: String
    public let value: String
    /// The kinds of step whose inputs carry it.
    public let kinds: Set<StepKind>

    /// Whether a step planned with `input` follows the rule.
    public func holds(for input: JSONValue) -> Bool { input[field]?.stringValue == value }

    /// The problem with `input`'s field, or nil when it is absent or holds the rule's value.
    public func problem(in input: JSONValue) -> String? {
        guard let found = input[field], found.stringValue != value else { return nil }
        return "\(field) must be \"\(value)\" (a step planned before the field existed has none), got \(PipelineReader.render(found))"
    }

    /// Every rule, in the order `plan` writes them and `StepInputCheck` reports them.
    public static let all: [LaterRule] = [.newExamplesFirst, .promptMarkersAsText, .weightDecayTowardParent, .blameEverySource]
}

extension LaterRule {
    /// `sample_order: new_first` (sample): when the night's budget cannot hold every eligible example, those no
    /// night has trained on come first and used ones fill the rest as rehearsal (ReplayBuffer's `SampleOrder`).
    /// Steps planned before drew one weighted sample over every eligible example.
    public static let newExamplesFirst = LaterRule(field: "sample_order", value: "new_first", kinds: [.sample])

    /// `prompt_markers: text` (train, eval): the text of a control token (`<|im_start|>`) inside an example's own
    /// text is tokenized as text; only the chat template adds special tokens (DESIGN.md, "Privacy"). Steps planned
    /// before parsed such text as the control token.
    public static let promptMarkersAsText = LaterRule(field: "prompt_markers", value: "text", kinds: [.train, .eval])

    /// `weight_decay_toward: parent` (train): a night that starts from its weights parent decays toward the
    /// parent's weights, holding tonight's change back instead of eroding what the chain learnt (Training's
    /// `AdamW`); a run from zero decays toward zero either way. Steps planned before decayed toward zero.
    public static let weightDecayTowardParent = LaterRule(field: "weight_decay_toward", value: "parent", kinds: [.train])

    /// `blame_fallback: every_source` (eval): a `worse` night whose first-order estimate blames no source blames
    /// every source with examples in tonight's training set (`SourceAttribution`), and says so. Of the two
    /// fallbacks weighed, this one costs nothing; retraining without each source would cost a training run per
    /// source. Otherwise the worse batch stays and a warm-started lineage meets it night after night. Steps
    /// planned before blamed nobody then.
    public static let blameEverySource = LaterRule(field: "blame_fallback", value: "every_source", kinds: [.eval])
}
