/// Whether a gate verdict could have come from the gate: a report whose numbers contradict its outcome (a
/// `better` with p 0.99, a verdict on n 0, an alpha of 7) is refused, because `promote` trusts the outcome
/// without `--force`.
///
/// Rules (Evaluation's `PromotionGate`, one-sided Wilcoxon at level alpha):
/// - always: n ≥ 0; p, when given, in [0, 1]; alpha, when given, in (0, 1); statistic, median difference and
///   effect size finite; the alternative one of `less`, `greater`, `two-sided`;
/// - `better` or `worse`: n ≥ 1, and both p and alpha given;
/// - the verdict the report's own test decides (`less` → better, `greater` → worse, `two-sided` → either)
///   needs p < alpha; the opposite verdict was decided by the other one-sided test, whose p-value is not in the
///   report, and for alpha ≤ 0.5 the two one-sided p-values add up to at least 1, so it needs p ≥ alpha.
/// `not_enough_evidence` makes no claim about p: the gate also says it below its minimum number of pairs, or below
/// its minimum effect; nor does `forgets`, decided by the canary whatever the held-out test said short of `worse`.
extension GateSummary {
    public static let alternatives = ["less", "greater", "two-sided"]

    /// Throws `RegistryError.inconsistentGateReport` naming the first contradiction.
    public func checkConsistency() throws {
        func refuse(_ reason: String) -> RegistryError { .inconsistentGateReport(reason: reason) }
        guard n >= 0 else { throw refuse("n is \(n); a count of pairs is at least 0") }
        if let pValue, !(pValue >= 0 && pValue <= 1) { throw refuse("p_value is \(pValue); a p-value lies between 0 and 1") }
        if let alpha, !(alpha > 0 && alpha < 1) { throw refuse("alpha is \(alpha); a significance level lies strictly between 0 and 1") }
        for (name, value) in [("statistic", statistic), ("median_difference", medianDifference), ("effect_size", effectSize)] {
            if let value, !value.isFinite { throw refuse("\(name) is not a finite number") }
        }
        guard Self.alternatives.contains(alternative.value) else {
            throw refuse("alternative is '\(alternative)'; the gate's are \(Self.alternatives.joined(separator: ", "))")
        }
        // `forgets` is the forgetting guard's verdict on the canary, whatever the held-out test said short of `worse`.
        guard outcome != .notEnoughEvidence, outcome != .forgets else { return }
        let verdict = outcome.rawValue
        guard n >= 1 else { throw refuse("outcome '\(verdict)' with n \(n); a verdict needs at least one pair") }
        guard let pValue, let alpha else { throw refuse("outcome '\(verdict)' without both p_value and alpha") }
        let decidedByThisTest = alternative.value == "two-sided"
            || (alternative.value == "less") == (outcome == .better)
        if decidedByThisTest {
            guard pValue < alpha else {
                throw refuse("outcome '\(verdict)' but p_value \(pValue) is not below alpha \(alpha) (alternative \(alternative))")
            }
        } else if alpha <= 0.5, pValue < alpha {
            throw refuse("outcome '\(verdict)' but p_value \(pValue) is significant for the opposite direction "
                         + "(alternative \(alternative), alpha \(alpha))")
        }
    }
}
