/// The verdicts of the gate (DESIGN.md, "Evaluation and promotion"). Only `better` promotes.
///
/// Precedence when the forgetting guard runs too (`GateReport.judging(canary:)`): `worse` before `forgets` before
/// `better` and `not_enough_evidence`.
public enum GateOutcome: String, Sendable, Codable, CaseIterable {
    /// The candidate's losses are significantly lower, by at least the minimum effect when one is set.
    case better
    /// Neither direction is significant, there are too few pairs, or the improvement is below the minimum effect:
    /// keep the current adapter.
    case notEnoughEvidence = "not_enough_evidence"
    /// The candidate's losses are significantly higher: keep the current adapter, and say so.
    case worse
    /// Not worse on the held-out set, but the candidate failed the forgetting guard on the engine's canary: it
    /// could not show it keeps what the base model could already do. Keep the current adapter.
    case forgets
}

/// Decides whether a candidate adapter beats the incumbent on paired per-example losses (lower is better).
///
/// The decision is two one-sided signed-rank tests at level α on `candidate − baseline`: `better` when the
/// `less` test has p < α, `worse` when the `greater` test has p < α (for α ≤ 0.5 at most one can hold: the
/// two one-sided p-values of a discrete or continuity-corrected test add up to at least 1). With
/// `alternative: .twoSided` the two-sided p-value decides significance and the sign of R+ − R− the
/// direction. The report carries the test the caller asked for.
public struct PromotionGate: Sendable, Equatable {
    public static let defaultAlpha = 0.05
    /// Twice the fewest pairs that can ever promote at the default α (`smallestDecisivePairs`, 5): with 5 the
    /// gate promotes only when every example improves. pipelines/README.md gives the measured rates.
    public static let defaultMinimumPairs = 10

    /// The fewest pairs with which the exact one-sided signed-rank test can give p < `alpha` at all: its
    /// smallest p-value is 2^-n (every difference on the favoured side), so n = ⌊−log2 α⌋ + 1 (5 at α = 0.05,
    /// 7 at 0.01). Below it no data can promote; the gate's `min_pairs` should not be lower.
    public static func smallestDecisivePairs(alpha: Double) -> Int {
        precondition(alpha > 0 && alpha <= 1, "alpha is a probability")
        var n = 0
        var smallest = 1.0
        while smallest >= alpha {
            n += 1
            smallest /= 2
        }
        return n
    }

    public var alpha: Double
    /// Below this many pairs (zeros included) the outcome is `not_enough_evidence`, whatever the p-value.
    public var minimumPairs: Int
    public var options: WilcoxonOptions
    /// The smallest improvement that can be `better`: the candidate's median per-example gain, −median(d), in
    /// nats of mean token NLL. nil: no minimum (what every gate before the setting did).
    ///
    /// The signed-rank test sees only signs and ranks, so ten pairs each 1e-4 better give p ≈ 0.001; over many
    /// nights on one pinned held-out set such consistent specks would be promoted again and again. The unit is
    /// nats rather than a fraction of the incumbent's NLL because a difference of mean token NLL already is a
    /// ratio: ε nats means each completion token is e^ε times as likely, the same claim at any level of NLL,
    /// whereas a fraction would ask more of a lineage the model finds hard.
    public var minimumEffect: Double?

    public init(alpha: Double = PromotionGate.defaultAlpha, minimumPairs: Int = PromotionGate.defaultMinimumPairs,
                options: WilcoxonOptions = WilcoxonOptions(), minimumEffect: Double? = nil) throws {
        guard alpha > 0, alpha <= 0.5 else { throw EvaluationError.invalidAlpha(alpha) }
        if let minimumEffect, !(minimumEffect.isFinite && minimumEffect >= 0) {
            throw EvaluationError.invalidMinimumEffect(minimumEffect)
        }
        self.alpha = alpha
        self.minimumPairs = max(0, minimumPairs)
        self.options = options
        self.minimumEffect = minimumEffect
    }

    /// Judges paired scores: `candidate[i]` and `baseline[i]` are the same held-out example's mean NLL.
    /// Throws only for malformed input (unequal lengths, non-finite scores); an empty or all-zero comparison
    /// is a `not_enough_evidence` report with its reason.
    public func evaluate(candidate: [Double], baseline: [Double]) throws -> GateReport {
        try evaluate(differences: WilcoxonSignedRank.differences(candidate: candidate, baseline: baseline))
    }

    public func evaluate(_ comparison: HeldOutComparison) throws -> GateReport {
        try evaluate(differences: comparison.differences)
    }

    public func evaluate(differences d: [Double]) throws -> GateReport {
        if let bad = d.firstIndex(where: { !$0.isFinite }) {
            throw EvaluationError.nonFiniteScore(side: "difference", index: bad)
        }
        let result: WilcoxonResult
        do {
            result = try WilcoxonSignedRank.test(differences: d, options: options)
        } catch let error as EvaluationError {
            switch error {
            case .noPairs, .undefinedNormalApproximation, .permutationNeedsTwoPairs:
                return GateReport(gate: self, differences: d, result: nil, outcome: .notEnoughEvidence,
                                  reason: error.description)
            default: throw error
            }
        }
        if d.count < minimumPairs {
            return GateReport(gate: self, differences: d, result: result, outcome: .notEnoughEvidence,
                              reason: "\(d.count) pairs is below the minimum of \(minimumPairs)")
        }
        if result.zeros == d.count {
            return GateReport(gate: self, differences: d, result: result, outcome: .notEnoughEvidence,
                              reason: "every difference is zero")
        }
        let outcome: GateOutcome
        // The report's `p_value` is the configured test's; an outcome found by the opposite one-sided test names
        // that test's p-value in the reason, so a refusal carries its own evidence.
        var evidence = ""
        switch options.alternative {
        case .twoSided:
            if result.pValue < alpha {
                outcome = result.rankSumPositive < result.rankSumNegative ? .better : .worse
            } else {
                outcome = .notEnoughEvidence
            }
        case .less, .greater:
            let lower = try pValue(result, .less, d), higher = try pValue(result, .greater, d)
            outcome = lower < alpha ? .better : (higher < alpha ? .worse : .notEnoughEvidence)
            if outcome == .worse && options.alternative == .less { evidence = " (p \(higher), alternative greater)" }
            if outcome == .better && options.alternative == .greater { evidence = " (p \(lower), alternative less)" }
        }
        let reason: String
        switch outcome {
        case .better:
            // Significant, but is it large enough? The gain is the median of −d, the report's median difference.
            let gain = -median(d)
            if let minimumEffect, gain < minimumEffect {
                return GateReport(gate: self, differences: d, result: result, outcome: .notEnoughEvidence,
                                  reason: "the candidate's losses are significantly lower at alpha \(alpha)\(evidence), but its median "
                                      + "improvement \(gain) is below the minimum effect of \(minimumEffect)")
            }
            reason = "the candidate's losses are significantly lower at alpha \(alpha)\(evidence)"
        case .worse: reason = "the candidate's losses are significantly higher at alpha \(alpha)\(evidence)"
        case .notEnoughEvidence, .forgets: reason = "no significant difference at alpha \(alpha)"
        }
        return GateReport(gate: self, differences: d, result: result, outcome: outcome, reason: reason)
    }

    /// The p-value of `result`'s data under `alternative`, reusing `result` when it already is that test.
    private func pValue(_ result: WilcoxonResult, _ alternative: Alternative, _ d: [Double]) throws -> Double {
        if result.options.alternative == alternative { return result.pValue }
        var other = options
        other.alternative = alternative
        return try WilcoxonSignedRank.test(differences: d, options: other).pValue
    }
}
