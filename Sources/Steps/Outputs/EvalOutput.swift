import AdaptCore
import Evaluation
import Pipelines
import ReplayBuffer

/// The eval step's verdict: the whole gate report and its outcome, both sides' per-example scores in
/// example-id order and their means, which incumbent was compared, (in a run planned with `on_worse`) the
/// attribution of a worse candidate and the sources quarantined, and (in a run planned with `eval.canary`) the
/// forgetting guard's per-item margins.
public struct EvalOutput: StepResult, Equatable {
    public static let kind = StepKind.eval

    public struct Inputs: Codable, Sendable, Equatable {
        public var baseModel: Digest
        public var heldOutSnapshot: Digest
        public var candidateAdapter: Digest
        public var incumbentAdapter: ComparedAdapter
        /// The BLAS threads a `blas_threads: auto` step resolved (`StepThreads`), which its replay scores at; left
        /// out when the input fixed the count.
        public var blasThreads: Int? = nil

        enum CodingKeys: String, CodingKey {
            case baseModel = "base_model", heldOutSnapshot = "held_out_snapshot"
            case candidateAdapter = "candidate_adapter", incumbentAdapter = "incumbent_adapter"
            case blasThreads = "blas_threads"
        }
    }

    /// The active version the candidate was compared against (nil: the base model), so the promote step can
    /// check it is still the active one.
    public struct Incumbent: Codable, Sendable, Equatable {
        /// `lineage/vN`.
        public var version: String
        public var adapterBlob: Digest

        enum CodingKeys: String, CodingKey { case version, adapterBlob = "adapter_blob" }
    }

    /// The canary margins log p(right) − log p(wrong) per item kept, in the set's order (`CanaryScoring`), and, when
    /// the guard has its fluency part, the right replies' mean token NLL (`base_right_nll`, `candidate_right_nll`;
    /// absent in runs planned before it). The set's name and digest and the tests are in `gate.canary`.
    public struct CanaryMargins: Codable, Sendable, Equatable {
        public var base: [Double]
        public var candidate: [Double]
        public var baseRightNLL: [Double]?
        public var candidateRightNLL: [Double]?

        public init(base: [Double], candidate: [Double], baseRightNLL: [Double]? = nil, candidateRightNLL: [Double]? = nil) {
            (self.base, self.candidate, self.baseRightNLL, self.candidateRightNLL) = (base, candidate, baseRightNLL, candidateRightNLL)
        }

        enum CodingKeys: String, CodingKey {
            case base, candidate
            case baseRightNLL = "base_right_nll", candidateRightNLL = "candidate_right_nll"
        }
    }

    /// What a run planned with `on_worse` records about a worse candidate.
    public struct WorseHandling: Sendable, Equatable {
        public var onWorse: OnWorse
        /// Measured only when the gate said `worse`.
        public var attribution: SourceAttribution?
        /// The blamed sources, when `onWorse` is `quarantine`.
        public var quarantinedSources: [String]
    }

    public var outcome: GateOutcome
    public var gate: RecordedGateReport
    public var heldOutExamples: Int
    public var examplesDigest: Digest
    public var candidateScores: [Double]
    public var incumbentScores: [Double]
    /// nil when there were no pairs.
    public var candidateMeanNLL: Double?
    public var incumbentMeanNLL: Double?
    public var incumbent: Incumbent?
    /// nil for a run planned before `on_worse` existed: it neither attributes nor quarantines.
    public var worse: WorseHandling?
    /// nil for a run planned under the half-capped held-out rule.
    public var gateReadiness: GateReadiness?
    /// The forgetting guard's margins; nil when it was switched off or the run was planned before it.
    public var canaryMargins: CanaryMargins?
    /// Whether the run's eval input had `canary` (null or not): only then is `canary_margins` written, so a run
    /// planned before the guard keeps its output's bytes.
    public var plannedWithCanary: Bool
    public var inputs: Inputs

    enum CodingKeys: String, CodingKey {
        case outcome, gate, incumbent, attribution, inputs
        case heldOutExamples = "held_out_examples", examplesDigest = "examples_digest"
        case candidateScores = "candidate_scores", incumbentScores = "incumbent_scores"
        case candidateMeanNLL = "candidate_mean_nll", incumbentMeanNLL = "incumbent_mean_nll"
        case onWorse = "on_worse", quarantinedSources = "quarantined_sources", gateReadiness = "gate_readiness"
        case canaryMargins = "canary_margins"
    }

    public init(outcome: GateOutcome, gate: RecordedGateReport, heldOutExamples: Int, examplesDigest: Digest,
                candidateScores: [Double], incumbentScores: [Double], candidateMeanNLL: Double?, incumbentMeanNLL: Double?,
                incumbent: Incumbent?, worse: WorseHandling?, gateReadiness: GateReadiness?, canaryMargins: CanaryMargins? = nil,
                plannedWithCanary: Bool = false, inputs: Inputs) {
        self.outcome = outcome
        self.gate = gate
        self.heldOutExamples = heldOutExamples
        self.examplesDigest = examplesDigest
        self.candidateScores = candidateScores
        self.incumbentScores = incumbentScores
        self.candidateMeanNLL = candidateMeanNLL
        self.incumbentMeanNLL = incumbentMeanNLL
        self.incumbent = incumbent
        self.worse = worse
        self.gateReadiness = gateReadiness
        self.canaryMargins = canaryMargins
        self.plannedWithCanary = plannedWithCanary
        self.inputs = inputs
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var worse: WorseHandling?
        if c.contains(.onWorse) {
            worse = WorseHandling(onWorse: try c.decode(OnWorse.self, forKey: .onWorse),
                                  attribution: try c.decode(SourceAttribution?.self, forKey: .attribution),
                                  quarantinedSources: try c.decode([String].self, forKey: .quarantinedSources))
        }
        self.init(
            outcome: try c.decode(GateOutcome.self, forKey: .outcome), gate: try c.decode(RecordedGateReport.self, forKey: .gate),
            heldOutExamples: try c.decode(Int.self, forKey: .heldOutExamples),
            examplesDigest: try c.decode(Digest.self, forKey: .examplesDigest),
            candidateScores: try c.decode([Double].self, forKey: .candidateScores),
            incumbentScores: try c.decode([Double].self, forKey: .incumbentScores),
            candidateMeanNLL: try c.decode(Double?.self, forKey: .candidateMeanNLL),
            incumbentMeanNLL: try c.decode(Double?.self, forKey: .incumbentMeanNLL),
            incumbent: try c.decode(Incumbent?.self, forKey: .incumbent), worse: worse,
            gateReadiness: try c.decodeIfPresent(GateReadiness.self, forKey: .gateReadiness),
            canaryMargins: try c.decodeIfPresent(CanaryMargins.self, forKey: .canaryMargins),
            plannedWithCanary: c.contains(.canaryMargins),
            inputs: try c.decode(Inputs.self, forKey: .inputs))
    }

    // By hand: absent means and the base-model incumbent are explicit nulls, as the step always wrote them;
    // the `on_worse` fields, `gate_readiness` and `canary_margins` are left out for the runs planned without them.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(outcome, forKey: .outcome)
        try c.encode(gate, forKey: .gate)
        try c.encode(heldOutExamples, forKey: .heldOutExamples)
        try c.encode(examplesDigest, forKey: .examplesDigest)
        try c.encode(candidateScores, forKey: .candidateScores)
        try c.encode(incumbentScores, forKey: .incumbentScores)
        try c.encode(candidateMeanNLL, forKey: .candidateMeanNLL)
        try c.encode(incumbentMeanNLL, forKey: .incumbentMeanNLL)
        try c.encode(incumbent, forKey: .incumbent)
        if let worse {
            try c.encode(worse.onWorse, forKey: .onWorse)
            try c.encode(worse.attribution, forKey: .attribution)
            try c.encode(worse.quarantinedSources, forKey: .quarantinedSources)
        }
        try c.encodeIfPresent(gateReadiness, forKey: .gateReadiness)
        if plannedWithCanary { try c.encode(canaryMargins, forKey: .canaryMargins) }
        try c.encode(inputs, forKey: .inputs)
    }
}
