/// The Wilcoxon signed-rank test on paired differences, compatible with `scipy.stats.wilcoxon` (SciPy 1.17).
///
/// Behaviour copied from SciPy's documented semantics (`scipy/stats/_wilcoxon.py`):
/// - `auto` uses the exact distribution when there are at most 50 pairs (zeros included in that count) and
///   neither ties nor zeros; with ties or zeros it enumerates all 2ⁿ sign flips when n ≤ 13 (SciPy's
///   `PermutationMethod` is exhaustive there, since 2¹³ is below its 9999 resamples); otherwise the normal
///   approximation.
/// - `exact` with ties or zeros rounds R+ up for `less` and down for `greater` before reading the exact law of
///   the number of ranked differences (conservative, SciPy gh-19872).
/// - The normal approximation subtracts the tie correction Σ(t³ − t)/48 from the variance and, under
///   `pratt`, the zeros' share (Cureton 1967); the continuity correction moves z by 0.5/σ towards the null.
/// - The reported statistic is R+ for one-sided tests and min(R+, R−) for two-sided ones.
/// Where SciPy returns NaN or raises, this throws an `EvaluationError` instead.
public enum WilcoxonSignedRank {
    /// The largest n for which `exact` is computed: the distribution has n(n+1)/2 + 1 entries and costs
    /// O(n³) to build (about half a second at this size in a release build). `auto` never asks for more
    /// than 50; above the limit the normal approximation is accurate to far better than any α in use.
    public static let exactLimit = 1000

    /// Runs the test on `differences` (candidate − baseline).
    public static func test(differences d: [Double], options: WilcoxonOptions = WilcoxonOptions()) throws -> WilcoxonResult {
        guard !d.isEmpty else { throw EvaluationError.noPairs }
        if let bad = d.firstIndex(where: { !$0.isFinite }) {
            throw EvaluationError.nonFiniteScore(side: "difference", index: bad)
        }
        let ranks = SignedRanks(differences: d, zeroMethod: options.zeroMethod)
        let method = resolve(options.method, pairs: d.count, ranks: ranks)
        let plus = ranks.rankSumPositive
        var z: Double? = nil
        let p: Double
        switch method {
        case .approx:
            guard ranks.standardDeviation > 0 else {
                throw EvaluationError.undefinedNormalApproximation(pairs: d.count)
            }
            var score = (plus - ranks.mean) / ranks.standardDeviation
            if options.correction {
                let sign: Double
                switch options.alternative {
                case .greater: sign = 1
                case .less: sign = -1
                case .twoSided: sign = score > 0 ? 1 : (score < 0 ? -1 : 0)
                }
                score -= sign * 0.5 / ranks.standardDeviation
            }
            z = score
            switch options.alternative {
            case .less: p = StandardNormal.cdf(score)
            case .greater: p = StandardNormal.sf(score)
            case .twoSided: p = 2 * StandardNormal.sf(Swift.abs(score))
            }
        case .exact:
            guard ranks.count <= exactLimit else { throw EvaluationError.exactTooLarge(n: ranks.count, limit: exactLimit) }
            let law = WilcoxonNullDistribution(n: ranks.count)
            let up = Int(plus.rounded(.up)), down = Int(plus.rounded(.down))
            switch options.alternative {
            case .less: p = law.cdf(up)
            case .greater: p = law.sf(down)
            case .twoSided: p = min(max(2 * min(law.sf(down), law.cdf(up)), 0), 1)
            }
        case .permutation:
            guard d.count >= 2 else { throw EvaluationError.permutationNeedsTwoPairs }
            p = permutationPValue(ranks: ranks, observed: plus, options: options)
        }
        let minus = ranks.rankSumNegative
        let statistic = options.alternative == .twoSided ? min(plus, minus) : plus
        let total = plus + minus
        return WilcoxonResult(
            statistic: statistic, pValue: p, n: ranks.count, pairs: d.count, zeros: ranks.zeros,
            method: method, options: options, rankSumPositive: plus, rankSumNegative: minus, z: z,
            medianDifference: median(d), effectSize: total > 0 ? (plus - minus) / total : 0)
    }

    /// Runs the test on `candidate[i] − baseline[i]`, refusing unequal lengths and non-finite scores.
    public static func test(candidate: [Double], baseline: [Double],
                            options: WilcoxonOptions = WilcoxonOptions()) throws -> WilcoxonResult {
        try test(differences: differences(candidate: candidate, baseline: baseline), options: options)
    }

    /// `candidate − baseline`, element by element, after checking lengths and finiteness.
    public static func differences(candidate: [Double], baseline: [Double]) throws -> [Double] {
        guard candidate.count == baseline.count else {
            throw EvaluationError.unequalLengths(candidate: candidate.count, baseline: baseline.count)
        }
        if let bad = candidate.firstIndex(where: { !$0.isFinite }) {
            throw EvaluationError.nonFiniteScore(side: "candidate", index: bad)
        }
        if let bad = baseline.firstIndex(where: { !$0.isFinite }) {
            throw EvaluationError.nonFiniteScore(side: "baseline", index: bad)
        }
        return zip(candidate, baseline).map { $0 - $1 }
    }

    static func resolve(_ method: WilcoxonMethod, pairs: Int, ranks: SignedRanks) -> ResolvedMethod {
        switch method {
        case .exact: return .exact
        case .approx: return .approx
        case .auto:
            if pairs > 50 { return .approx }
            if !(ranks.hasTies || ranks.zeros > 0) { return .exact }
            return pairs <= 13 ? .permutation : .approx
        }
    }

    /// The exhaustive sign-flip p-value of SciPy's `permutation_test` (permutation_type='samples', exact since
    /// 2ⁿ ≤ 9999): the share of flips whose R+ is at least as extreme, with values within 100 ulps·|R+| of
    /// the observed one counted as equal. Flipping a zero changes nothing, so enumerating the non-zero
    /// differences gives the same fractions as SciPy's 2ⁿ.
    static func permutationPValue(ranks: SignedRanks, observed: Double, options: WilcoxonOptions) -> Double {
        let nonZero = ranks.ranked.indices.filter { ranks.ranked[$0] != 0 }
        let gamma = Swift.abs(Double.ulpOfOne * 100 * observed)
        var lessCount = 0, greaterCount = 0
        let total = 1 << nonZero.count
        for subset in 0..<total {
            var mask = 0
            for (bit, index) in nonZero.enumerated() where (subset >> bit) & 1 == 1 { mask |= 1 << index }
            let value = ranks.rankSumPositive(flipping: mask, zeroMethod: options.zeroMethod)
            if value <= observed + gamma { lessCount += 1 }
            if value >= observed - gamma { greaterCount += 1 }
        }
        let less = Double(lessCount) / Double(total), greater = Double(greaterCount) / Double(total)
        let p: Double
        switch options.alternative {
        case .less: p = less
        case .greater: p = greater
        case .twoSided: p = min(less, greater) * 2
        }
        return min(max(p, 0), 1)
    }
}
