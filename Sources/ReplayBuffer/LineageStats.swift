/// Counts of one lineage, for `adapt data stats`.
public struct LineageStats: Sendable, Equatable, Codable {
    public let lineage: String
    public let examples: Int
    public let train: Int
    public let heldOut: Int
    /// Train examples that have used up `max_uses_per_example`.
    public let spent: Int
    public let tokens: Int
    /// Examples whose token count is an estimate.
    public let tokenCountsEstimated: Int
    public let oldestCreatedAt: Int64?
    public let newestCreatedAt: Int64?
    public let nextExpiry: Int64?
    public let imports: Int
    public let scrubbed: ScrubCounts
    public let nightsSampled: Int
    public let policy: LineagePolicy
    /// Whether the held-out set is large enough for the gate, and how many examples to import if not.
    public var gateReadiness: GateReadiness? = nil
    /// Train examples kept out of training by a quarantine (`adapt data release` lets them back in).
    public var quarantined: Int = 0

    enum CodingKeys: String, CodingKey {
        case lineage, examples, train, spent, tokens, imports, scrubbed, policy
        case heldOut = "held_out", tokenCountsEstimated = "token_counts_estimated"
        case oldestCreatedAt = "oldest_created_at", newestCreatedAt = "newest_created_at", nextExpiry = "next_expiry"
        case nightsSampled = "nights_sampled", gateReadiness = "gate_readiness", quarantined
    }
}
