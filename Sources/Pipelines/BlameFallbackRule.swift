import AdaptCore

/// `blame_fallback` of the eval step's input: whom a `worse` night blames when the first-order estimate blames no
/// source (every source's estimated effect on held-out NLL is zero or negative).
///
/// `plan` writes `every_source`: then every source of the window with examples in tonight's training set is blamed
/// (and, under `on_worse: quarantine`, quarantined), and the attribution says `blame_rule: every_source`. Of the
/// two rules the issue weighed, this one costs nothing: retraining without each source would cost one training
/// run per source. A lineage is otherwise stuck: the worse batch stays in the buffer and a warm-started night
/// keeps meeting it. A step planned before the field has none, blames only by the estimate, and replays equal.
public enum BlameFallbackRule {
    public static let field = "blame_fallback"
    /// The one value a step input may hold.
    public static let everySource = "every_source"

    /// Whether an eval step planned with `input` falls back to blaming every trained source.
    public static func applies(_ input: JSONValue) -> Bool { input[field]?.stringValue == everySource }

    /// The problem with `input`'s field, or nil when it is absent or `every_source`.
    public static func problem(in input: JSONValue) -> String? {
        guard let value = input[field], value.stringValue != everySource else { return nil }
        return "\(field) must be \"\(everySource)\" (a step planned before the field existed has none), got \(PipelineReader.render(value))"
    }
}
