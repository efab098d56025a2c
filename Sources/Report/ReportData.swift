import AdaptCore

/// Everything one report page is drawn from, and exactly what `adapt report --json` prints.
///
/// A run's report fills `runs` with that run, `jobs` with its timeline, `losses` (the raw loss of each point, as
/// `train --json` lists them) and `training` (their steps, the smoothed curve, checkpoints and resumes) from its train
/// step and `gate` from its eval and promote steps; a lineage's report fills `runs` and `nights` with the lineage's nightly runs, oldest first. Both carry the
/// lineage's registry (`versions`, `pointer_moves`, and `chain`: the active version and its weights parents down to
/// the base model). Example text appears only in `gate.examples`, and only when
/// `includes_text` is true (DESIGN.md, Privacy).
public struct ReportData: Sendable, Equatable, Encodable {
    public enum Subject: String, Sendable, Encodable { case run, lineage }

    public var subject: Subject
    public var lineage: String?
    public var generatedAt: Int64
    public var includesText: Bool
    public var runs: [ReportRun]
    public var jobs: [ReportJob]
    public var losses: LossCurve?
    public var gate: ReportGate?
    public var versions: [ReportVersion]
    public var pointerMoves: [ReportPointerMove]
    public var nights: [ReportNight]

    /// The active version and its `trained_from` parents, newest first (empty: the base model is active).
    public var chain: [ReportVersion] { ReportVersion.activeChain(of: versions) }

    public init(subject: Subject, lineage: String?, generatedAt: Int64, includesText: Bool, runs: [ReportRun],
                jobs: [ReportJob] = [], losses: LossCurve? = nil, gate: ReportGate? = nil, versions: [ReportVersion] = [],
                pointerMoves: [ReportPointerMove] = [], nights: [ReportNight] = []) {
        self.subject = subject
        self.lineage = lineage
        self.generatedAt = generatedAt
        self.includesText = includesText
        self.runs = runs
        self.jobs = jobs
        self.losses = losses
        self.gate = gate
        self.versions = versions
        self.pointerMoves = pointerMoves
        self.nights = nights
    }

    enum CodingKeys: String, CodingKey {
        case subject, lineage, runs, jobs, losses, training, gate, versions, nights, chain
        case generatedAt = "generated_at", includesText = "includes_text", pointerMoves = "pointer_moves"
    }

    // By hand so that absent sections are explicit nulls: the document's shape does not depend on the run.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(subject, forKey: .subject)
        try c.encode(lineage, forKey: .lineage)
        try c.encode(Timestamp.iso8601(generatedAt), forKey: .generatedAt)
        try c.encode(includesText, forKey: .includesText)
        try c.encode(runs, forKey: .runs)
        try c.encode(jobs, forKey: .jobs)
        try c.encode(losses?.points.map(\.loss) ?? [], forKey: .losses)
        try c.encode(losses, forKey: .training)
        try c.encode(gate, forKey: .gate)
        try c.encode(versions, forKey: .versions)
        try c.encode(pointerMoves, forKey: .pointerMoves)
        try c.encode(nights, forKey: .nights)
        try c.encode(chain.map(ChainLink.init), forKey: .chain)
    }
}

/// One run as the report heads it.
public struct ReportRun: Sendable, Equatable, Encodable {
    public var id: String
    public var name: String
    public var kind: String
    /// `active`, `succeeded`, `failed` or `cancelled`, as `adapt runs` says.
    public var state: String
    public var night: String?
    public var createdAt: Int64
    public var updatedAt: Int64
    public var cancelledAt: Int64?
    public var jobsSucceeded: Int
    public var jobsTotal: Int

    public init(id: String, name: String, kind: String, state: String, night: String?, createdAt: Int64, updatedAt: Int64,
                cancelledAt: Int64?, jobsSucceeded: Int, jobsTotal: Int) {
        self.id = id
        self.name = name
        self.kind = kind
        self.state = state
        self.night = night
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.cancelledAt = cancelledAt
        self.jobsSucceeded = jobsSucceeded
        self.jobsTotal = jobsTotal
    }

    enum CodingKeys: String, CodingKey {
        case id, name, kind, state, night
        case createdAt = "created_at", updatedAt = "updated_at", cancelledAt = "cancelled_at"
        case jobsSucceeded = "jobs_succeeded", jobsTotal = "jobs_total"
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(name, forKey: .name)
        try c.encode(kind, forKey: .kind)
        try c.encode(state, forKey: .state)
        try c.encode(night, forKey: .night)
        try c.encode(Timestamp.iso8601(createdAt), forKey: .createdAt)
        try c.encode(Timestamp.iso8601(updatedAt), forKey: .updatedAt)
        try c.encode(cancelledAt.map(Timestamp.iso8601), forKey: .cancelledAt)
        try c.encode(jobsSucceeded, forKey: .jobsSucceeded)
        try c.encode(jobsTotal, forKey: .jobsTotal)
    }
}
