/// One night of a lineage: its run, the held-out means its gate compared and what became of the candidate.
public struct ReportNight: Sendable, Equatable, Encodable {
    /// What the night came to, in the order a person asks.
    public enum Result: String, Sendable, Encodable {
        case promoted
        /// The gate did not say `better` (or the incumbent moved): the candidate was registered, not promoted.
        case refused
        case failed
        case cancelled
        /// Not finished when the report was made.
        case active
    }

    public var runID: String
    public var night: String
    public var state: String
    public var result: Result
    /// The gate's outcome; nil when the eval step did not finish.
    public var outcome: String?
    public var comparedWith: String?
    public var candidateMeanNLL: Double?
    public var incumbentMeanNLL: Double?
    public var heldOutExamples: Int?
    public var pValue: Double?
    public var version: String?

    public init(runID: String, night: String, state: String, result: Result, outcome: String?, comparedWith: String?,
                candidateMeanNLL: Double?, incumbentMeanNLL: Double?, heldOutExamples: Int?, pValue: Double?, version: String?) {
        self.runID = runID
        self.night = night
        self.state = state
        self.result = result
        self.outcome = outcome
        self.comparedWith = comparedWith
        self.candidateMeanNLL = candidateMeanNLL
        self.incumbentMeanNLL = incumbentMeanNLL
        self.heldOutExamples = heldOutExamples
        self.pValue = pValue
        self.version = version
    }

    enum CodingKeys: String, CodingKey {
        case night, state, result, outcome, version
        case runID = "run_id", comparedWith = "compared_with", candidateMeanNLL = "candidate_mean_nll"
        case incumbentMeanNLL = "incumbent_mean_nll", heldOutExamples = "held_out_examples", pValue = "p_value"
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(runID, forKey: .runID)
        try c.encode(night, forKey: .night)
        try c.encode(state, forKey: .state)
        try c.encode(result, forKey: .result)
        try c.encode(outcome, forKey: .outcome)
        try c.encode(comparedWith, forKey: .comparedWith)
        try c.encode(candidateMeanNLL, forKey: .candidateMeanNLL)
        try c.encode(incumbentMeanNLL, forKey: .incumbentMeanNLL)
        try c.encode(heldOutExamples, forKey: .heldOutExamples)
        try c.encode(pValue, forKey: .pValue)
        try c.encode(version, forKey: .version)
    }
}
