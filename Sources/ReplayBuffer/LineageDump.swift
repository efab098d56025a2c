import AdaptCore
import Foundation
import Storage

/// A lineage's whole replay-buffer state as one canonical JSON document: its policy, every example row and
/// every recorded use. The prune step stores one as a local blob before it changes anything, so a replay can
/// rebuild exactly the buffer the run started from in a scratch state directory (issue 7, "every run records
/// … input snapshot digests").
///
/// Like a dataset snapshot it holds user text (already scrubbed) and never leaves the machine; it is a blob
/// named by its SHA-256, so the digest recorded in the run's manifest names exactly one buffer state.
public struct LineageDump: Sendable, Equatable, Codable {
    public struct Row: Sendable, Equatable, Codable {
        public let id: String
        public let system: String?
        public let prompt: String
        public let completion: String
        public let source: String
        public let weight: Double
        public let tokenCount: Int
        public let tokenCountExact: Bool
        public let split: Split
        public let createdAt: Int64
        public let expiresAt: Int64
        /// Every turn of a conversation of more than one exchange; absent for a single exchange, so a buffer of
        /// single exchanges dumps byte for byte as it did before conversations were kept whole.
        public var turns: [Turn]? = nil
        /// The quarantine mark; absent for an example that may be sampled, so a buffer without quarantine dumps
        /// byte for byte as it did before quarantine existed.
        public var quarantinedAt: Int64? = nil
        public var quarantinedNight: String? = nil

        enum CodingKeys: String, CodingKey {
            case id, system, prompt, completion, source, weight, split, turns
            case tokenCount = "token_count", tokenCountExact = "token_count_exact"
            case createdAt = "created_at", expiresAt = "expires_at"
            case quarantinedAt = "quarantined_at", quarantinedNight = "quarantined_night"
        }
    }

    public struct Use: Sendable, Equatable, Codable {
        public let night: String
        public let exampleID: String
        public let tokens: Int

        enum CodingKeys: String, CodingKey {
            case night, tokens
            case exampleID = "example_id"
        }
    }

    public static let formatVersion = 1
    /// The format of a dump holding a whole conversation: a reader that knows only `formatVersion` refuses it
    /// rather than restoring the conversations cut to their last exchange. A dump of single exchanges keeps
    /// `formatVersion`, and its bytes.
    public static let conversationsFormatVersion = 2
    /// The format of a dump holding a quarantined example: an older reader would restore it sampleable.
    public static let quarantineFormatVersion = 3

    /// The format a dump of `rows` is written in: the oldest that can hold them.
    static func format(of rows: [Row]) -> Int {
        if rows.contains(where: { $0.quarantinedAt != nil }) { return quarantineFormatVersion }
        return rows.contains { $0.turns != nil } ? conversationsFormatVersion : formatVersion
    }

    public let format: Int
    public let lineage: String
    public let policy: LineagePolicy
    /// In id order, so the same buffer always encodes to the same bytes.
    public let examples: [Row]
    /// In (night, example id) order.
    public let uses: [Use]

    /// The canonical JSON bytes (sorted keys, no spaces): what is stored and digested.
    public var encoded: Data { JSON.canonical(self) }

    public static func decode(_ data: Data, context: String) throws -> LineageDump {
        let dump = try JSON.decode(LineageDump.self, from: data, context: context)
        let expected = format(of: dump.examples)
        guard dump.format == expected else {
            throw CoreError.invalidJSON(context: context, reason: "format \(dump.format) is not \(expected)")
        }
        return dump
    }
}

extension ReplayStore {
    /// The current state of `lineage` (an empty dump with the default policy when it has nothing stored).
    public func dump(lineage: String) throws -> LineageDump {
        try LineageName.validate(lineage)
        return try database.replayTransaction {
            let policy = try LineageTable.policy(database, lineage: lineage)
            let rows = try database.query("""
                SELECT id, system, prompt, completion, turns, source, weight, token_count, token_count_exact, split,
                       created_at, expires_at, quarantined_at, quarantined_night
                FROM replay_examples WHERE lineage = ? ORDER BY id
                """, lineage).map { row -> LineageDump.Row in
                guard let id = row.string("id"), let prompt = row.string("prompt"), let completion = row.string("completion"),
                      let source = row.string("source"), let weight = row.double("weight"),
                      let tokens = row.int("token_count"), let exact = row.bool("token_count_exact"),
                      let split = row.string("split").flatMap(Split.init(rawValue:)),
                      let created = row.int64("created_at"), let expires = row.int64("expires_at") else {
                    throw ReplayError.corruptRow(table: "replay_examples", column: "a required column")
                }
                return LineageDump.Row(id: id, system: row.string("system"), prompt: prompt, completion: completion,
                                       source: source, weight: weight, tokenCount: tokens, tokenCountExact: exact,
                                       split: split, createdAt: created, expiresAt: expires,
                                       turns: try ExampleTable.turns(row), quarantinedAt: row.int64("quarantined_at"),
                                       quarantinedNight: row.string("quarantined_night"))
            }
            let uses = try database.query(
                "SELECT night, example_id, tokens FROM replay_uses WHERE lineage = ? ORDER BY night, example_id", lineage
            ).map { row -> LineageDump.Use in
                guard let night = row.string("night"), let id = row.string("example_id"), let tokens = row.int("tokens") else {
                    throw ReplayError.corruptRow(table: "replay_uses", column: "a required column")
                }
                return LineageDump.Use(night: night, exampleID: id, tokens: tokens)
            }
            return LineageDump(format: LineageDump.format(of: rows), lineage: lineage, policy: policy, examples: rows, uses: uses)
        }
    }

    /// Makes `dump.lineage` hold exactly what `dump` holds, in one transaction: its policy, examples and uses
    /// replace whatever the lineage had. Used by replay in a scratch state directory.
    public func restore(_ dump: LineageDump) throws {
        try LineageName.validate(dump.lineage)
        try dump.policy.validate()
        let now = clock.nowMilliseconds()
        let lineage = dump.lineage
        try database.replayTransaction {
            try database.run("DELETE FROM replay_uses WHERE lineage = ?", lineage)
            try database.run("DELETE FROM replay_examples WHERE lineage = ?", lineage)
            try LineageTable.ensure(database, lineage: lineage, now: now)
            try LineageTable.write(database, lineage: lineage, policy: dump.policy, now: now)
            let importID = try ImportTable.start(database, lineage: lineage, now: now)
            for row in dump.examples {
                _ = try ExampleTable.insert(database, ExampleTable.NewRow(
                    id: row.id, lineage: lineage, system: row.system, prompt: row.prompt, completion: row.completion,
                    turns: row.turns, source: row.source, weight: row.weight, tokenCount: row.tokenCount, tokenCountExact: row.tokenCountExact,
                    split: row.split, heldOutKey: HeldOutSplit.key(id: row.id), createdAt: row.createdAt,
                    expiresAt: row.expiresAt, importID: importID, quarantinedAt: row.quarantinedAt,
                    quarantinedNight: row.quarantinedNight))
            }
            for use in dump.uses {
                try UseTable.record(database, lineage: lineage, night: use.night, exampleID: use.exampleID,
                                    tokens: use.tokens, now: now)
            }
            try ImportTable.finish(database, id: importID, records: dump.examples.count, imported: dump.examples.count,
                                   duplicates: 0, skipped: 0, scrubbed: ScrubCounts())
        }
    }
}
