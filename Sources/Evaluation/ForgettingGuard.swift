/// The forgetting guard: does a candidate keep what the base model could already do?
///
/// On a canary of general prompts, each with a right and a wrong reply, the margin of a model is
/// m = log p(right) − log p(wrong) (the caller scores it). Per item, d = base margin − candidate margin: how much of
/// the base's preference for the right reply the candidate lost. A style moves both replies alike and leaves m
/// mostly alone; forgetting shrinks or reverses it.
///
/// The test is one of non-inferiority with the burden on the candidate (Wellek, "Testing Statistical Hypotheses of
/// Equivalence and Noninferiority", 2nd ed., ch. 5): H0 median(d) ≥ δ (the candidate loses δ or more), H1
/// median(d) < δ, by a one-sided Wilcoxon signed-rank test on d − δ (alternative `less`, SciPy's defaults
/// otherwise). The candidate passes only when H0 is rejected at level α: with too little evidence, or a test that
/// cannot be run, it fails.
public struct ForgettingGuard: Sendable, Equatable {
    /// The largest median loss of margin, in nats, that still counts as keeping what the base could do: the
    /// candidate may make the right reply's odds against the wrong one e times smaller on the typical item.
    /// Chosen before any candidate was measured (docs/gate-and-registry.md, BENCHMARKS.md).
    public static let defaultDelta = 1.0
    public static let defaultAlpha = 0.05

    public var delta: Double
    public var alpha: Double

    public init(delta: Double = ForgettingGuard.defaultDelta, alpha: Double = ForgettingGuard.defaultAlpha) throws {
        guard delta.isFinite, delta >= 0 else { throw EvaluationError.invalidCanaryDelta(delta) }
        guard alpha > 0, alpha <= 0.5 else { throw EvaluationError.invalidAlpha(alpha) }
        self.delta = delta
        self.alpha = alpha
    }

    /// Judges per-item margins, `base[i]` and `candidate[i]` of the same canary item; `canary` and `digest` name
    /// the set (recorded in the report). Throws only for malformed input (unequal lengths, non-finite margins).
    public func evaluate(base: [Double], candidate: [Double], canary: String, digest: String) throws -> CanaryReport {
        guard base.count == candidate.count else {
            throw EvaluationError.unequalLengths(candidate: candidate.count, baseline: base.count)
        }
        if let bad = base.firstIndex(where: { !$0.isFinite }) { throw EvaluationError.nonFiniteScore(side: "base margin", index: bad) }
        if let bad = candidate.firstIndex(where: { !$0.isFinite }) {
            throw EvaluationError.nonFiniteScore(side: "candidate margin", index: bad)
        }
        let losses = zip(base, candidate).map { $0 - $1 }   // d, per item
        let shifted = losses.map { $0 - delta }              // d − δ: negative where the item kept its margin
        let options = WilcoxonOptions(alternative: .less)
        let result: WilcoxonResult
        do {
            result = try WilcoxonSignedRank.test(differences: shifted, options: options)
        } catch let error as EvaluationError {
            switch error {
            case .noPairs, .undefinedNormalApproximation, .permutationNeedsTwoPairs:
                return CanaryReport(guard: self, canary: canary, digest: digest, base: base, candidate: candidate, losses: losses,
                                    result: nil, outcome: .fails,
                                    reason: "the non-inferiority test could not be run (\(error.description)), so the candidate did not show it keeps the base's margins")
            default: throw error
            }
        }
        let passes = result.pValue < alpha
        let reason = passes
            ? "the candidate loses less than \(delta) of the base's margin at alpha \(alpha)"
            : "the candidate did not show it loses less than \(delta) of the base's margin at alpha \(alpha) (p \(result.pValue))"
        return CanaryReport(guard: self, canary: canary, digest: digest, base: base, candidate: candidate, losses: losses,
                            result: result, outcome: passes ? .passes : .fails, reason: reason)
    }
}

/// The forgetting guard's verdict.
public enum CanaryOutcome: String, Sendable, Codable, CaseIterable {
    /// The candidate showed it loses less than δ of the base's margin.
    case passes
    /// It did not: the gate's outcome is `forgets` unless the held-out set already says `worse`.
    case fails
}

/// What the forgetting guard decided and why: `gate.canary` in the eval step's output and in `adapt eval --json`.
///
/// Fields: `canary` (the set's name), `canary_digest`, `items`, `delta`, `alpha`, `n` (items ranked), `statistic`
/// (R+ of d − δ), `p_value`, `method`, `median_margin_loss` (median d), `base_mean_margin`, `candidate_mean_margin`,
/// `outcome` (`passes` or `fails`) and `reason`. Values that do not exist are null.
public struct CanaryReport: Sendable, Equatable, Codable {
    public let canary: String
    public let canaryDigest: String
    public let items: Int
    public let delta: Double
    public let alpha: Double
    public let n: Int
    public let statistic: Double?
    public let pValue: Double?
    public let method: String?
    public let medianMarginLoss: Double?
    public let baseMeanMargin: Double?
    public let candidateMeanMargin: Double?
    public let outcome: CanaryOutcome
    /// A sentence made of numbers and fixed words only.
    public let reason: String

    init(guard g: ForgettingGuard, canary: String, digest: String, base: [Double], candidate: [Double], losses: [Double],
         result: WilcoxonResult?, outcome: CanaryOutcome, reason: String) {
        func mean(_ values: [Double]) -> Double? { values.isEmpty ? nil : values.reduce(0, +) / Double(values.count) }
        self.canary = canary
        canaryDigest = digest
        items = losses.count
        delta = g.delta
        alpha = g.alpha
        n = result?.n ?? 0
        statistic = result?.statistic
        pValue = result?.pValue
        method = result?.method.rawValue
        medianMarginLoss = losses.isEmpty ? nil : median(losses)
        baseMeanMargin = mean(base)
        candidateMeanMargin = mean(candidate)
        self.outcome = outcome
        self.reason = reason
    }

    enum CodingKeys: String, CodingKey {
        case canary, items, delta, alpha, n, statistic, method, outcome, reason
        case canaryDigest = "canary_digest", pValue = "p_value", medianMarginLoss = "median_margin_loss"
        case baseMeanMargin = "base_mean_margin", candidateMeanMargin = "candidate_mean_margin"
    }

    // By hand so absent values are explicit nulls: the shape never changes.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(canary, forKey: .canary)
        try c.encode(canaryDigest, forKey: .canaryDigest)
        try c.encode(items, forKey: .items)
        try c.encode(delta, forKey: .delta)
        try c.encode(alpha, forKey: .alpha)
        try c.encode(n, forKey: .n)
        try c.encode(statistic, forKey: .statistic)
        try c.encode(pValue, forKey: .pValue)
        try c.encode(method, forKey: .method)
        try c.encode(medianMarginLoss, forKey: .medianMarginLoss)
        try c.encode(baseMeanMargin, forKey: .baseMeanMargin)
        try c.encode(candidateMeanMargin, forKey: .candidateMeanMargin)
        try c.encode(outcome, forKey: .outcome)
        try c.encode(reason, forKey: .reason)
    }
}
