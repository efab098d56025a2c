import AdaptCore
import Storage

/// Quarantine: training examples a `worse` night blamed (the eval step's source attribution, with the
/// pipeline's `eval.on_worse: quarantine`) are kept out of training until the user releases their source
/// (`adapt data release`) or erases them (`adapt data forget`). The mark is a column of the example's row, so
/// erasure takes it with the example, and the prune step's buffer snapshot carries it, so a replayed sample
/// skips exactly what the live one skipped.
public struct QuarantineRelease: Sendable, Equatable, Codable {
    public let lineage: String
    public let source: String
    /// Examples whose mark was cleared (0 when the source had nothing quarantined).
    public let released: Int
    /// Examples of the source in the lineage, marked or not.
    public let examples: Int
}

/// The training examples of one source imported in the window an attribution looks at.
public struct SourceExamples: Sendable, Equatable {
    public let source: String
    public let examples: Int
    /// Of those, already quarantined (by an earlier night).
    public let quarantined: Int
}

extension ReplayStore {
    /// Quarantines the training examples of `sources` in `lineage`, inside the caller's transaction on `db` (a
    /// step's fenced completion); returns how many were marked. Held-out examples are left alone.
    public static func quarantine(sources: [String], lineage: String, night: String, now: Int64, in db: any SQLConnection) throws -> Int {
        try LineageName.validate(lineage)
        return try db.replayTransaction {
            try ExampleTable.quarantine(db, lineage: lineage, sources: sources, night: night, now: now)
        }
    }

    /// Makes the quarantined examples of `source` in `lineage` sampleable again.
    /// Throws `ReplayError.unknownLineage` for a lineage nothing was stored for and `.unknownSource` for a source
    /// that has no example in the lineage; releasing a source with nothing quarantined releases 0.
    public func release(lineage: String, source: String) throws -> QuarantineRelease {
        try LineageName.validate(lineage)
        return try database.replayTransaction {
            guard try LineageTable.names(database).contains(lineage) else { throw ReplayError.unknownLineage(lineage) }
            let examples = try ExampleTable.count(database, lineage: lineage, source: source)
            guard examples > 0 else { throw ReplayError.unknownSource(source, lineage: lineage) }
            let released = try ExampleTable.release(database, lineage: lineage, source: source)
            return QuarantineRelease(lineage: lineage, source: source, released: released, examples: examples)
        }
    }

    /// The sources of `lineage`'s training examples created after `after` (every one when nil) and no later
    /// than `upTo` (no bound when nil), by source name, read on `db` (a step's connection).
    public static func trainSources(lineage: String, after: Int64?, upTo: Int64?, in db: any SQLConnection) throws -> [SourceExamples] {
        try LineageName.validate(lineage)
        return try ExampleTable.trainSources(db, lineage: lineage, after: after, upTo: upTo)
            .map { SourceExamples(source: $0.source, examples: $0.examples, quarantined: $0.quarantined) }
    }

    /// The source of each stored example among `ids`.
    public static func sources(of ids: [String], in db: any SQLConnection) throws -> [String: String] {
        try ExampleTable.sources(db, ids: ids)
    }
}
