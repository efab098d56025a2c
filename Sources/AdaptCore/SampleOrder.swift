/// Which eligible examples a night takes first when its budget (examples or tokens) cannot hold them all.
public enum SampleOrder: String, Sendable, Codable, CaseIterable {
    /// Examples no night has trained on yet come first, each group in weighted order: a warm-started candidate
    /// already carries what its weights parent learned from the used ones, so the budget goes to what is new,
    /// and used examples with budget left fill the rest as rehearsal.
    case newFirst = "new_first"
    /// One weighted draw over every eligible example (runs planned before the order was recorded).
    case weighted

    /// The sample step's input field that records the order.
    public static let inputField = "sample_order"
}
