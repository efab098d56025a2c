import AdaptCore

/// `weight_decay_toward` of the train step's input: what AdamW's decoupled weight decay pulls a warm-started
/// candidate toward.
///
/// `plan` writes `parent`: a night that starts from its weights parent decays toward the parent's weights, so
/// the decay holds tonight's change back instead of eroding what the chain learnt (Training's `AdamW`). A run
/// from zero decays toward zero either way. A step planned before the field existed has none: it decayed toward
/// zero, and keeps that rule so that the run replays equal.
public enum WeightDecayRule {
    public static let field = "weight_decay_toward"
    /// The one value a step input may hold.
    public static let parent = "parent"

    /// Whether a train step planned with `input` decays toward its weights parent.
    public static func towardParent(_ input: JSONValue) -> Bool { input[field]?.stringValue == parent }

    /// The problem with `input`'s field, or nil when it is absent or `parent`.
    public static func problem(in input: JSONValue) -> String? {
        guard let value = input[field], value.stringValue != parent else { return nil }
        return "\(field) must be \"\(parent)\" (a step planned before the field existed has none), got \(PipelineReader.render(value))"
    }
}
