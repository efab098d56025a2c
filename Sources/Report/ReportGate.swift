/// The eval step's verdict as the report shows it: every held-out example's NLL on both sides, the test and its
/// outcome, and what the promote step did with it.
public struct ReportGate: Sendable, Equatable, Encodable {
    /// One held-out example's pair of mean token NLLs; `id`, `prompt` and `completion` only with `--include-text`.
    public struct Example: Sendable, Equatable, Encodable {
        public var index: Int
        public var incumbent: Double
        public var candidate: Double
        public var id: String?
        public var prompt: String?
        public var completion: String?

        public init(index: Int, incumbent: Double, candidate: Double, id: String? = nil, prompt: String? = nil, completion: String? = nil) {
            self.index = index
            self.incumbent = incumbent
            self.candidate = candidate
            self.id = id
            self.prompt = prompt
            self.completion = completion
        }
    }

    public var jobID: String
    /// `base` or the incumbent version (`lineage/vN`).
    public var comparedWith: String
    /// `better`, `not_enough_evidence` or `worse`.
    public var outcome: String
    public var method: String
    public var zeroMethod: String
    public var alternative: String
    public var n: Int
    public var pairs: Int
    public var statistic: Double?
    public var pValue: Double?
    public var alpha: Double
    public var medianDifference: Double?
    /// The gate's own sentence (numbers and fixed words).
    public var reason: String
    public var candidateMeanNLL: Double?
    public var incumbentMeanNLL: Double?
    /// nil until the promote step has run.
    public var promoted: Bool?
    public var promoteReason: String?
    /// The registry version the promote step registered the candidate as.
    public var version: String?
    public var examples: [Example]

    public init(jobID: String, comparedWith: String, outcome: String, method: String, zeroMethod: String, alternative: String,
                n: Int, pairs: Int, statistic: Double?, pValue: Double?, alpha: Double, medianDifference: Double?, reason: String,
                candidateMeanNLL: Double?, incumbentMeanNLL: Double?, promoted: Bool?, promoteReason: String?, version: String?,
                examples: [Example]) {
        self.jobID = jobID
        self.comparedWith = comparedWith
        self.outcome = outcome
        self.method = method
        self.zeroMethod = zeroMethod
        self.alternative = alternative
        self.n = n
        self.pairs = pairs
        self.statistic = statistic
        self.pValue = pValue
        self.alpha = alpha
        self.medianDifference = medianDifference
        self.reason = reason
        self.candidateMeanNLL = candidateMeanNLL
        self.incumbentMeanNLL = incumbentMeanNLL
        self.promoted = promoted
        self.promoteReason = promoteReason
        self.version = version
        self.examples = examples
    }

    enum CodingKeys: String, CodingKey {
        case outcome, method, alternative, n, pairs, statistic, alpha, reason, promoted, version, examples
        case jobID = "job_id", comparedWith = "compared_with", zeroMethod = "zero_method", pValue = "p_value"
        case medianDifference = "median_difference", candidateMeanNLL = "candidate_mean_nll"
        case incumbentMeanNLL = "incumbent_mean_nll", promoteReason = "promote_reason"
    }

    // By hand so that absent values are explicit nulls.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(jobID, forKey: .jobID)
        try c.encode(comparedWith, forKey: .comparedWith)
        try c.encode(outcome, forKey: .outcome)
        try c.encode(method, forKey: .method)
        try c.encode(zeroMethod, forKey: .zeroMethod)
        try c.encode(alternative, forKey: .alternative)
        try c.encode(n, forKey: .n)
        try c.encode(pairs, forKey: .pairs)
        try c.encode(statistic, forKey: .statistic)
        try c.encode(pValue, forKey: .pValue)
        try c.encode(alpha, forKey: .alpha)
        try c.encode(medianDifference, forKey: .medianDifference)
        try c.encode(reason, forKey: .reason)
        try c.encode(candidateMeanNLL, forKey: .candidateMeanNLL)
        try c.encode(incumbentMeanNLL, forKey: .incumbentMeanNLL)
        try c.encode(promoted, forKey: .promoted)
        try c.encode(promoteReason, forKey: .promoteReason)
        try c.encode(version, forKey: .version)
        try c.encode(examples, forKey: .examples)
    }
}
