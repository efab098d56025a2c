/// Failures of the signed-rank test, the gate and the pairing of held-out scores.
///
/// Descriptions name counts, indices and example ids (digests chosen by the replay buffer), never a score
/// file's contents or a user's text.
public enum EvaluationError: Error, Equatable, CustomStringConvertible {
    /// No pairs at all: SciPy returns NaN for an empty sample.
    case noPairs
    /// Candidate and baseline hold different numbers of scores.
    case unequalLengths(candidate: Int, baseline: Int)
    /// A score is NaN or infinite (SciPy would propagate NaN).
    case nonFiniteScore(side: String, index: Int)
    /// Every difference is zero, so the normal approximation has zero variance (SciPy returns NaN).
    case undefinedNormalApproximation(pairs: Int)
    /// SciPy's `auto` rule chose a sign-flip permutation test, which needs two or more pairs.
    case permutationNeedsTwoPairs
    /// `exact` was requested for more ranked differences than `WilcoxonSignedRank.exactLimit`.
    case exactTooLarge(n: Int, limit: Int)
    /// An option outside its domain (programmer-facing; the command line validates first).
    case invalidAlpha(Double)
    /// A minimum effect that is negative or not a number (programmer-facing; the command line validates first).
    case invalidMinimumEffect(Double)
    /// A forgetting-guard margin δ that is negative or not a number.
    case invalidCanaryDelta(Double)
    /// A forgetting-guard fluency δ_f that is negative or not a number.
    case invalidFluencyDelta(Double)
    /// An example scored on one side only.
    case unpairedExample(id: String, missingFrom: String)
    /// The same example id twice on one side.
    case duplicateExample(id: String, side: String)

    public var description: String {
        switch self {
        case .noPairs:
            return "there are no paired scores; score at least one held-out example on both sides"
        case let .unequalLengths(candidate, baseline):
            return "the candidate has \(candidate) scores and the baseline \(baseline); pass one score per held-out example on each side, in the same order"
        case let .nonFiniteScore(side, index):
            return "\(side) score at index \(index) is not a finite number; rescore that example"
        case let .undefinedNormalApproximation(pairs):
            return "all \(pairs) differences are zero, so the normal approximation is undefined; use --zero-method zsplit or --method exact, or score more examples"
        case .permutationNeedsTwoPairs:
            return "one pair with a zero difference is too little for the permutation test; score more examples"
        case let .exactTooLarge(n, limit):
            return "the exact distribution is computed for at most \(limit) ranked differences, not \(n); use --method approx or auto"
        case let .invalidAlpha(alpha):
            return "alpha \(alpha) is outside (0, 0.5]; pass e.g. 0.05"
        case let .invalidMinimumEffect(value):
            return "minimum effect \(value) is not a number of nats of at least 0; pass e.g. 0.02, or 0 for none"
        case let .invalidCanaryDelta(value):
            return "canary delta \(value) is not a number of nats of at least 0; pass e.g. 1"
        case let .invalidFluencyDelta(value):
            return "canary fluency delta \(value) is not a number of nats per token of at least 0; pass e.g. 1"
        case let .unpairedExample(id, missingFrom):
            return "example \(id) has no \(missingFrom) score; score it under both adapters"
        case let .duplicateExample(id, side):
            return "example \(id) is scored twice on the \(side) side; keep one score per example"
        }
    }
}
