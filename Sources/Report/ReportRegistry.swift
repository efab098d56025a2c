import AdaptCore

/// A registered adapter version of the report's lineage.
public struct ReportVersion: Sendable, Equatable, Encodable {
    /// `lineage/vN`.
    public var version: String
    public var digest: String
    public var parent: String?
    /// The version whose weights this one's training started from (`lineage/vN`); nil: trained from zero.
    public var trainedFrom: String?
    public var active: Bool
    public var retired: Bool
    public var createdAt: Int64
    public var heldOutMeanNLL: Double?
    public var baselineHeldOutMeanNLL: Double?

    public init(version: String, digest: String, parent: String?, active: Bool, retired: Bool, createdAt: Int64,
                heldOutMeanNLL: Double?, baselineHeldOutMeanNLL: Double?, trainedFrom: String? = nil) {
        self.version = version
        self.digest = digest
        self.parent = parent
        self.trainedFrom = trainedFrom
        self.active = active
        self.retired = retired
        self.createdAt = createdAt
        self.heldOutMeanNLL = heldOutMeanNLL
        self.baselineHeldOutMeanNLL = baselineHeldOutMeanNLL
    }

    enum CodingKeys: String, CodingKey {
        case version, digest, parent, active, retired
        case trainedFrom = "trained_from"
        case createdAt = "created_at", heldOutMeanNLL = "held_out_mean_nll", baselineHeldOutMeanNLL = "baseline_held_out_mean_nll"
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(version, forKey: .version)
        try c.encode(digest, forKey: .digest)
        try c.encode(parent, forKey: .parent)
        try c.encode(active, forKey: .active)
        try c.encode(retired, forKey: .retired)
        try c.encode(Timestamp.iso8601(createdAt), forKey: .createdAt)
        try c.encode(heldOutMeanNLL, forKey: .heldOutMeanNLL)
        try c.encode(baselineHeldOutMeanNLL, forKey: .baselineHeldOutMeanNLL)
        try c.encode(trainedFrom, forKey: .trainedFrom)
    }
}

/// One move of the lineage's active pointer; `from`/`to` nil is the base model.
public struct ReportPointerMove: Sendable, Equatable, Encodable {
    public var at: Int64
    public var from: String?
    public var to: String?
    /// `gate`, `force`, `rollback` or `retire`.
    public var reason: String
    public var actor: String

    public init(at: Int64, from: String?, to: String?, reason: String, actor: String) {
        self.at = at
        self.from = from
        self.to = to
        self.reason = reason
        self.actor = actor
    }

    enum CodingKeys: String, CodingKey { case at, from, to, reason, actor }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(Timestamp.iso8601(at), forKey: .at)
        try c.encode(from, forKey: .from)
        try c.encode(to, forKey: .to)
        try c.encode(reason, forKey: .reason)
        try c.encode(actor, forKey: .actor)
    }
}
