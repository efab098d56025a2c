/// `eval.canary`: the forgetting guard's parameters, or null in a pipeline file to switch it off.
///
/// On the canary the engine ships (general prompts, each with a right and a wrong reply; never user text), the
/// candidate is compared with the base model item by item in two parts, each a one-sided Wilcoxon signed-rank test
/// of non-inferiority at level `alpha` (Evaluation's `ForgettingGuard`): ability, d = base margin − candidate
/// margin (margin log p(right) − log p(wrong)), must show median d < `delta`; fluency, d_f = candidate − base mean
/// token NLL of the right reply, must show median d_f < `fluency_delta`. A candidate that does not show both is
/// `forgets` (unless the held-out set says `worse`).
///
/// The fluency part's reference is the incumbent (`fluency_reference: incumbent`, the default): the version the gate
/// compares against, or the base model on a lineage's first night. A style moves plain wording a little each night,
/// and warm-started nights add those moves up: measured against the base, a lineage's fourth night already failed
/// fluency (docs/gate-and-registry.md). Against the night before, a style's steps pass and a night that collapses onto
/// its training text does not. The margin part stays against the base, so ability lost a little a night adds up to a
/// refusal.
///
/// An eval step planned before the guard has no `canary` in its input and runs none; one planned before the fluency
/// part has `{delta, alpha}` without `fluency_delta` and runs the margin part alone; one planned before the reference
/// was chosen has no `fluency_reference` and measures fluency against the base. Each replays as recorded.
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
    /// What the fluency part compares the candidate with; nil only in a step planned before the choice: the base.
    public var fluencyReference: FluencyReference?

    /// The model the candidate's right-reply NLL is compared with.
    public enum FluencyReference: String, Sendable, Codable, CaseIterable {
        /// The version the gate compares against (the base model when the lineage has none).
        case incumbent
        /// The base model.
        case base
    }

    public init(delta: Double = CanaryGuard.defaultDelta, alpha: Double = CanaryGuard.defaultAlpha,
                fluencyDelta: Double? = CanaryGuard.defaultFluencyDelta, fluencyReference: FluencyReference? = .incumbent) {
        self.delta = delta
        self.alpha = alpha
        self.fluencyDelta = fluencyDelta
        self.fluencyReference = fluencyReference
    }

    enum CodingKeys: String, CodingKey {
        case delta, alpha
        case fluencyDelta = "fluency_delta", fluencyReference = "fluency_reference"
    }

    /// The input field of the eval step.
    public static let field = "canary"
}
