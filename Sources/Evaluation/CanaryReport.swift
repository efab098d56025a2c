/// What the forgetting guard decided and why: `gate.canary` in the eval step's output and in `adapt eval --json`.
///
/// Fields: `canary` (the set's name), `canary_digest`, `items`, `delta`, `alpha`, `n` (items ranked), `statistic`
/// (R+ of d − δ), `p_value`, `method` (these four of the margin part), `median_margin_loss` (median d),
/// `base_mean_margin`, `candidate_mean_margin`, `outcome` (`passes` or `fails`, of the whole guard) and `reason`.
/// A guard with a fluency part adds `fluency_delta`, `margin_outcome`, `fluency_outcome`, `fluency_n`,
/// `fluency_statistic`, `fluency_p_value`, `fluency_method`, `median_fluency_loss` (median d_f) and
/// `base_mean_right_nll`, `candidate_mean_right_nll`, and, when fluency was measured against another model than the
/// base, `fluency_reference` (its name, e.g. `incumbent`) and `reference_mean_right_nll`; a margin-only guard (a run planned before the fluency part) has
/// none of these keys, so its report keeps its bytes. Values that do not exist are null.
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
    /// The fluency part's figures: nil for a margin-only guard.
    public let fluency: Fluency?

    /// The fluency part of the report, and the margin part's own outcome.
    public struct Fluency: Sendable, Equatable {
        public let delta: Double
        public let marginOutcome: CanaryOutcome
        public let outcome: CanaryOutcome
        public let n: Int
        public let statistic: Double?
        public let pValue: Double?
        public let method: String?
        public let medianLoss: Double?
        public let baseMeanRightNLL: Double?
        public let candidateMeanRightNLL: Double?
        /// The fluency reference when it is not the base, and its mean right-reply NLL.
        public let reference: String?
        public let referenceMeanRightNLL: Double?
    }

    init(guard g: ForgettingGuard, canary: String, digest: String, base: CanaryScores, candidate: CanaryScores, losses: [Double],
         margin: NonInferiorityPart,
         fluency part: (losses: [Double], test: NonInferiorityPart, reference: (name: String, scores: CanaryScores)?)?,
         reason: String) {
        func mean(_ values: [Double]) -> Double? { values.isEmpty ? nil : values.reduce(0, +) / Double(values.count) }
        self.canary = canary
        canaryDigest = digest
        items = losses.count
        delta = g.delta
        alpha = g.alpha
        n = margin.result?.n ?? 0
        statistic = margin.result?.statistic
        pValue = margin.result?.pValue
        method = margin.result?.method.rawValue
        medianMarginLoss = losses.isEmpty ? nil : median(losses)
        baseMeanMargin = mean(base.margins)
        candidateMeanMargin = mean(candidate.margins)
        outcome = margin.passes && (part?.test.passes ?? true) ? .passes : .fails
        self.reason = reason
        fluency = part.map { part in
            Fluency(delta: g.fluencyDelta ?? 0, marginOutcome: margin.outcome, outcome: part.test.outcome, n: part.test.result?.n ?? 0,
                    statistic: part.test.result?.statistic, pValue: part.test.result?.pValue,
                    method: part.test.result?.method.rawValue, medianLoss: part.losses.isEmpty ? nil : median(part.losses),
                    baseMeanRightNLL: mean(base.rightNLL), candidateMeanRightNLL: mean(candidate.rightNLL),
                    reference: part.reference?.name, referenceMeanRightNLL: part.reference.flatMap { mean($0.scores.rightNLL) })
        }
    }

    enum CodingKeys: String, CodingKey {
        case canary, items, delta, alpha, n, statistic, method, outcome, reason
        case canaryDigest = "canary_digest", pValue = "p_value", medianMarginLoss = "median_margin_loss"
        case baseMeanMargin = "base_mean_margin", candidateMeanMargin = "candidate_mean_margin"
        case fluencyDelta = "fluency_delta", marginOutcome = "margin_outcome", fluencyOutcome = "fluency_outcome"
        case fluencyN = "fluency_n", fluencyStatistic = "fluency_statistic", fluencyPValue = "fluency_p_value"
        case fluencyMethod = "fluency_method", medianFluencyLoss = "median_fluency_loss"
        case baseMeanRightNLL = "base_mean_right_nll", candidateMeanRightNLL = "candidate_mean_right_nll"
        case fluencyReference = "fluency_reference", referenceMeanRightNLL = "reference_mean_right_nll"
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        canary = try c.decode(String.self, forKey: .canary)
        canaryDigest = try c.decode(String.self, forKey: .canaryDigest)
        items = try c.decode(Int.self, forKey: .items)
        delta = try c.decode(Double.self, forKey: .delta)
        alpha = try c.decode(Double.self, forKey: .alpha)
        n = try c.decode(Int.self, forKey: .n)
        statistic = try c.decodeIfPresent(Double.self, forKey: .statistic)
        pValue = try c.decodeIfPresent(Double.self, forKey: .pValue)
        method = try c.decodeIfPresent(String.self, forKey: .method)
        medianMarginLoss = try c.decodeIfPresent(Double.self, forKey: .medianMarginLoss)
        baseMeanMargin = try c.decodeIfPresent(Double.self, forKey: .baseMeanMargin)
        candidateMeanMargin = try c.decodeIfPresent(Double.self, forKey: .candidateMeanMargin)
        outcome = try c.decode(CanaryOutcome.self, forKey: .outcome)
        reason = try c.decode(String.self, forKey: .reason)
        // A report made before the fluency part has no `fluency_delta`.
        if let delta = try c.decodeIfPresent(Double.self, forKey: .fluencyDelta) {
            fluency = Fluency(
                delta: delta, marginOutcome: try c.decode(CanaryOutcome.self, forKey: .marginOutcome),
                outcome: try c.decode(CanaryOutcome.self, forKey: .fluencyOutcome), n: try c.decode(Int.self, forKey: .fluencyN),
                statistic: try c.decodeIfPresent(Double.self, forKey: .fluencyStatistic),
                pValue: try c.decodeIfPresent(Double.self, forKey: .fluencyPValue),
                method: try c.decodeIfPresent(String.self, forKey: .fluencyMethod),
                medianLoss: try c.decodeIfPresent(Double.self, forKey: .medianFluencyLoss),
                baseMeanRightNLL: try c.decodeIfPresent(Double.self, forKey: .baseMeanRightNLL),
                candidateMeanRightNLL: try c.decodeIfPresent(Double.self, forKey: .candidateMeanRightNLL),
                reference: try c.decodeIfPresent(String.self, forKey: .fluencyReference),
                referenceMeanRightNLL: try c.decodeIfPresent(Double.self, forKey: .referenceMeanRightNLL))
        } else {
            fluency = nil
        }
    }

    // By hand so absent values are explicit nulls: the shape of each kind of guard never changes.
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
        guard let fluency else { return }
        try c.encode(fluency.delta, forKey: .fluencyDelta)
        try c.encode(fluency.marginOutcome, forKey: .marginOutcome)
        try c.encode(fluency.outcome, forKey: .fluencyOutcome)
        try c.encode(fluency.n, forKey: .fluencyN)
        try c.encode(fluency.statistic, forKey: .fluencyStatistic)
        try c.encode(fluency.pValue, forKey: .fluencyPValue)
        try c.encode(fluency.method, forKey: .fluencyMethod)
        try c.encode(fluency.medianLoss, forKey: .medianFluencyLoss)
        try c.encode(fluency.baseMeanRightNLL, forKey: .baseMeanRightNLL)
        try c.encode(fluency.candidateMeanRightNLL, forKey: .candidateMeanRightNLL)
        // Only a guard measured against another reference than the base has these: the others keep their bytes.
        guard let reference = fluency.reference else { return }
        try c.encode(reference, forKey: .fluencyReference)
        try c.encode(fluency.referenceMeanRightNLL, forKey: .referenceMeanRightNLL)
    }
}
