/// Everything the gate decided and why: the eval step's output and `adapt gate --json`.
///
/// Encoded with the field names of DESIGN.md (`n, statistic, p_value, method, zero_method, alternative,
/// median_difference, effect_size, outcome`) plus `pairs`, `zeros`, `alpha`, `min_pairs`, `more_pairs_needed`,
/// `correction`, `requested_method`, `z` and `reason`, `min_effect` (null: no minimum) and `canary` (the forgetting
/// guard's `CanaryReport`, null when it did not run). Values that do not exist (no test could be run) are `null`.
public struct GateReport: Sendable, Equatable, Codable {
    public let n: Int
    public let pairs: Int
    public let zeros: Int
    public let statistic: Double?
    public let pValue: Double?
    /// The method used (`exact`, `permutation`, `approx`), or the one requested when no test ran.
    public let method: String
    public let requestedMethod: WilcoxonMethod
    public let zeroMethod: ZeroMethod
    public let alternative: Alternative
    public let correction: Bool
    public let medianDifference: Double?
    public let effectSize: Double?
    public let z: Double?
    public let alpha: Double
    public let minPairs: Int
    /// Pairs missing before the gate will judge at all: `min_pairs − pairs`, or 0.
    public let morePairsNeeded: Int
    /// The smallest median improvement that can be `better`, in nats of mean token NLL; nil: none.
    public let minEffect: Double?
    public private(set) var outcome: GateOutcome
    /// A sentence about the decision; made of numbers and fixed words only.
    public private(set) var reason: String
    /// The forgetting guard's verdict, when it ran (`judging(canary:)`).
    public private(set) var canary: CanaryReport?

    init(gate: PromotionGate, differences d: [Double], result: WilcoxonResult?, outcome: GateOutcome, reason: String) {
        n = result?.n ?? 0
        pairs = d.count
        zeros = d.reduce(0) { $0 + ($1 == 0 ? 1 : 0) }
        statistic = result?.statistic
        pValue = result?.pValue
        method = result?.method.rawValue ?? gate.options.method.rawValue
        requestedMethod = gate.options.method
        zeroMethod = gate.options.zeroMethod
        alternative = gate.options.alternative
        correction = gate.options.correction
        medianDifference = d.isEmpty ? nil : median(d)
        effectSize = result?.effectSize
        z = result?.z
        alpha = gate.alpha
        minPairs = gate.minimumPairs
        morePairsNeeded = max(0, gate.minimumPairs - d.count)
        minEffect = gate.minimumEffect
        self.outcome = outcome
        self.reason = reason
        canary = nil
    }

    /// This report with the forgetting guard's verdict added. Precedence: `worse` before `forgets` before `better`
    /// and `not_enough_evidence`: a candidate worse on the held-out set is called worse whatever the canary says
    /// (its refusal is the stronger one, and only it quarantines), and one that fails the guard is `forgets` even
    /// when the held-out test was not decisive, since that is the more important thing to tell its user.
    public func judging(canary report: CanaryReport) -> GateReport {
        var judged = self
        judged.canary = report
        if report.outcome == .fails, outcome != .worse {
            judged.outcome = .forgets
            judged.reason = "the candidate fails the forgetting guard: \(report.reason); on the held-out set alone: \(outcome.rawValue), \(reason)"
        }
        return judged
    }

    enum CodingKeys: String, CodingKey {
        case n, pairs, zeros, statistic, method, alternative, correction, z, alpha, outcome, reason
        case pValue = "p_value", requestedMethod = "requested_method", zeroMethod = "zero_method"
        case medianDifference = "median_difference", effectSize = "effect_size", minPairs = "min_pairs"
        case morePairsNeeded = "more_pairs_needed", minEffect = "min_effect", canary
    }

    // Written by hand so absent values appear as explicit nulls: the JSON shape never changes.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(n, forKey: .n)
        try c.encode(pairs, forKey: .pairs)
        try c.encode(zeros, forKey: .zeros)
        try c.encode(statistic, forKey: .statistic)
        try c.encode(pValue, forKey: .pValue)
        try c.encode(method, forKey: .method)
        try c.encode(requestedMethod, forKey: .requestedMethod)
        try c.encode(zeroMethod, forKey: .zeroMethod)
        try c.encode(alternative, forKey: .alternative)
        try c.encode(correction, forKey: .correction)
        try c.encode(medianDifference, forKey: .medianDifference)
        try c.encode(effectSize, forKey: .effectSize)
        try c.encode(z, forKey: .z)
        try c.encode(alpha, forKey: .alpha)
        try c.encode(minPairs, forKey: .minPairs)
        try c.encode(morePairsNeeded, forKey: .morePairsNeeded)
        try c.encode(outcome, forKey: .outcome)
        try c.encode(reason, forKey: .reason)
        try c.encode(minEffect, forKey: .minEffect)
        try c.encode(canary, forKey: .canary)
    }
}
