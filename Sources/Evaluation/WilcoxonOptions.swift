/// How zero differences enter the signed-rank test (SciPy's `zero_method`).
public enum ZeroMethod: String, Sendable, Codable, CaseIterable {
    /// Drop zero differences before ranking (Wilcoxon 1945; SciPy's default).
    case wilcox
    /// Rank zeros with the rest but count them on neither side; adjust the normal law (Pratt 1959, Cureton 1967).
    case pratt
    /// Rank zeros and split their ranks evenly between the positive and negative sums.
    case zsplit
}

/// The alternative hypothesis about the differences `candidate − baseline` (SciPy's `alternative`).
public enum Alternative: String, Sendable, Codable, CaseIterable {
    case twoSided = "two-sided"
    /// The differences tend to be negative: the candidate's losses are lower.
    case less
    /// The differences tend to be positive: the candidate's losses are higher.
    case greater
}

/// How the p-value is computed (SciPy's `method`; `approx` is SciPy's `asymptotic`).
public enum WilcoxonMethod: String, Sendable, Codable, CaseIterable {
    /// SciPy's rule: exact when there are at most 50 pairs and no ties or zeros; with ties or zeros, an
    /// exhaustive sign-flip permutation test when there are at most 13 pairs; the normal approximation otherwise.
    case auto
    /// The exact null distribution of R+ for the number of ranked differences (conservative with ties).
    case exact
    /// The normal approximation with tie correction.
    case approx
}

/// The computation actually used, after `auto` has been resolved.
public enum ResolvedMethod: String, Sendable, Codable {
    case exact
    /// All 2ⁿ sign flips enumerated (what SciPy's `auto` does for n ≤ 13 with ties or zeros).
    case permutation
    case approx
}

/// Options of one signed-rank test; the defaults are SciPy's except `alternative`, which is the gate's.
public struct WilcoxonOptions: Sendable, Equatable, Codable {
    public var alternative: Alternative
    public var method: WilcoxonMethod
    public var zeroMethod: ZeroMethod
    /// Continuity correction of the normal approximation (SciPy's `correction`, default off).
    public var correction: Bool

    public init(alternative: Alternative = .less, method: WilcoxonMethod = .auto,
                zeroMethod: ZeroMethod = .wilcox, correction: Bool = false) {
        self.alternative = alternative
        self.method = method
        self.zeroMethod = zeroMethod
        self.correction = correction
    }
}

/// What one test reports.
public struct WilcoxonResult: Sendable, Equatable {
    /// R+ (the sum of the ranks of positive differences) for one-sided tests, min(R+, R−) for two-sided,
    /// exactly as SciPy reports it.
    public let statistic: Double
    public let pValue: Double
    /// Differences that were ranked: the non-zero ones under `wilcox`, all of them under `pratt`/`zsplit`.
    public let n: Int
    /// All pairs given, zeros included.
    public let pairs: Int
    public let zeros: Int
    public let method: ResolvedMethod
    public let options: WilcoxonOptions
    public let rankSumPositive: Double
    public let rankSumNegative: Double
    /// The z-score of the normal approximation (after continuity correction) when it was used.
    public let z: Double?
    /// The median of all differences (NumPy's median: the mean of the two middle values for even counts).
    public let medianDifference: Double
    /// Matched-pairs rank-biserial correlation (R+ − R−)/(R+ + R−) over the ranks the zero method uses, in
    /// [−1, 1]; negative means the candidate's losses are mostly lower. 0 when nothing was ranked.
    public let effectSize: Double
}
