import AdaptCore

/// The chain of weights parents: what the active adapter's weights were trained on, night after night.
extension ReportVersion {
    /// The active version of `versions` and its weights parents, newest first, down to the one trained from zero (on
    /// the base model): what the active adapter's weights carry. Empty when the base model is active. A parent of
    /// another lineage, or one missing from `versions`, ends the chain there.
    public static func activeChain(of versions: [ReportVersion]) -> [ReportVersion] {
        let byName = Dictionary(versions.map { ($0.version, $0) }, uniquingKeysWith: { first, _ in first })
        var chain: [ReportVersion] = []
        var next = versions.first { $0.active }
        while let version = next, !chain.contains(where: { $0.version == version.version }) {
            chain.append(version)
            next = version.trainedFrom.flatMap { byName[$0] }
        }
        return chain
    }
}

/// One link of `chain` in the JSON document: a version and its weights parent, with what a reader of the chain asks.
struct ChainLink: Encodable {
    let version: ReportVersion

    enum CodingKeys: String, CodingKey {
        case version, retired
        case trainedFrom = "trained_from", heldOutMeanNLL = "held_out_mean_nll", createdAt = "created_at"
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(version.version, forKey: .version)
        try c.encode(version.trainedFrom, forKey: .trainedFrom)
        try c.encode(version.retired, forKey: .retired)
        try c.encode(version.heldOutMeanNLL, forKey: .heldOutMeanNLL)
        try c.encode(Timestamp.iso8601(version.createdAt), forKey: .createdAt)
    }
}
