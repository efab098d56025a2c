/// `eval.canary`: the forgetting guard's parameters, or null in a pipeline file to switch it off.
///
/// On the canary the engine ships (general prompts, each with a right and a wrong reply; never user text), the
/// candidate's margin log p(right) − log p(wrong) is compared with the base model's, item by item: d = base margin −
/// candidate margin. The candidate passes when a one-sided Wilcoxon signed-rank test on d − `delta` rejects
/// "median d ≥ delta" at level `alpha`; otherwise the outcome is `forgets` (unless the held-out set says `worse`).
///
/// An eval step planned before the field has none in its input and runs no guard, so it replays as recorded.
public struct CanaryGuard: Sendable, Equatable, Codable {
    /// The largest median loss of margin, in nats of log-odds, a candidate may have: at 1 the right reply's odds
    /// against the wrong one may fall e-fold on the typical item. Fixed before any candidate was measured
    /// (Evaluation's `ForgettingGuard.defaultDelta`; a test keeps the two equal).
    public static let defaultDelta = 1.0
    public static let defaultAlpha = 0.05

    public var delta: Double
    public var alpha: Double

    public init(delta: Double = CanaryGuard.defaultDelta, alpha: Double = CanaryGuard.defaultAlpha) {
        self.delta = delta
        self.alpha = alpha
    }

    /// The input field of the eval step.
    public static let field = "canary"
}
