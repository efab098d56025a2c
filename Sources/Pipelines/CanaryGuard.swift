/// `eval.canary`: the forgetting guard's parameters, or null in a pipeline file to switch it off.
///
/// On the canary the engine ships (general prompts, each with a right and a wrong reply; never user text), the
/// candidate is compared with the base model item by item in two parts, each a one-sided Wilcoxon signed-rank test
/// of non-inferiority at level `alpha` (Evaluation's `ForgettingGuard`): ability, d = base margin − candidate
/// margin (margin log p(right) − log p(wrong)), must show median d < `delta`; fluency, d_f = candidate − base mean
/// token NLL of the right reply, must show median d_f < `fluency_delta`. A candidate that does not show both is
/// `forgets` (unless the held-out set says `worse`).
///
/// An eval step planned before the guard has no `canary` in its input and runs none; one planned before the fluency
/// part has `{delta, alpha}` without `fluency_delta` and runs the margin part alone. Each replays as recorded.
public struct CanaryGuard: Sendable, Equatable, Codable {
    /// The largest median loss of margin, in nats of log-odds, a candidate may have: at 2 the right reply's odds
    /// against the wrong one may fall e²-fold on the typical item (Evaluation's `ForgettingGuard.defaultDelta`; a
    /// test keeps the two equal). It was 1 before the fluency part, when the guard shipped off.
    public static let defaultDelta = 2.0
    /// The largest median rise of the right replies' mean token NLL, in nats per token: at 1 the plain right answer
    /// may become at most e times less likely per token on the typical item (`ForgettingGuard.defaultFluencyDelta`).
    public static let defaultFluencyDelta = 1.0
    public static let defaultAlpha = 0.05

    public var delta: Double
    public var alpha: Double
    /// nil only in a step planned before the fluency part: margin alone.
    public var fluencyDelta: Double?

    public init(delta: Double = CanaryGuard.defaultDelta, alpha: Double = CanaryGuard.defaultAlpha,
                fluencyDelta: Double? = CanaryGuard.defaultFluencyDelta) {
        self.delta = delta
        self.alpha = alpha
        self.fluencyDelta = fluencyDelta
    }

    enum CodingKeys: String, CodingKey {
        case delta, alpha
        case fluencyDelta = "fluency_delta"
    }

    /// The input field of the eval step.
    public static let field = "canary"
}
