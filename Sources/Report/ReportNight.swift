import AdaptCore

/// One night of a lineage: its run, the held-out means its gate compared, what became of the candidate, and which
/// version was active when the night ended (the curve of the active version's held-out NLL, night by night).
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
    /// `lineage/vN` active once the night's promote step ran (nil: the base model, or no promote step finished).
    public var activeVersion: String?
    /// The weights parent the night's candidate started from (`lineage/vN`); nil when it trained from zero.
    public var startedFrom: String?
    /// Why it started there (the train step's `init.reason`: `active_version`, `no_active_version`, `incompatible`, …).
    public var startReason: String?
    /// The eval step's forgetting-guard figures as the step recorded them (its gate report's `canary`), passed through
    /// unchanged; nil for a night planned without the guard.
    public var canary: JSONValue?

    public init(runID: String, night: String, state: String, result: Result, outcome: String?, comparedWith: String?,
                candidateMeanNLL: Double?, incumbentMeanNLL: Double?, heldOutExamples: Int?, pValue: Double?, version: String?,
                activeVersion: String? = nil, startedFrom: String? = nil, startReason: String? = nil, canary: JSONValue? = nil) {
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
        self.activeVersion = activeVersion
        self.startedFrom = startedFrom
        self.startReason = startReason
        self.canary = canary
    }

    /// Whether the night's candidate became the active version.
    public var promoted: Bool { result == .promoted }

    /// The held-out mean NLL of the version active at the end of the night, on that night's held-out set: the
    /// candidate's when it was promoted, else the incumbent's (which stayed). nil when the gate did not finish.
    public var activeMeanNLL: Double? { promoted ? candidateMeanNLL : incumbentMeanNLL }

    enum CodingKeys: String, CodingKey {
        case night, state, result, outcome, version, promoted, canary
        case activeVersion = "active_version", activeMeanNLL = "active_mean_nll", startedFrom = "started_from"
        case startReason = "start_reason"
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
        try c.encode(promoted, forKey: .promoted)
        try c.encode(activeVersion, forKey: .activeVersion)
        try c.encode(activeMeanNLL, forKey: .activeMeanNLL)
        try c.encode(startedFrom, forKey: .startedFrom)
        try c.encode(startReason, forKey: .startReason)
        try c.encode(canary ?? .null, forKey: .canary)
    }
}
