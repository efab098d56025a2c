/// What an import did: counts only (the problems name line numbers and reasons, never text).
public struct ImportReport: Sendable, Equatable, Codable {
    public var lineage: String
    /// Non-blank lines read.
    public var records: Int
    public var imported: Int
    /// Records whose example was already stored (same lineage, text and source).
    public var duplicates: Int
    /// Bad lines left out (only with `skipBad`).
    public var skipped: Int
    /// False when bad lines stopped the import: nothing was stored.
    public var committed: Bool
    public var problems: [LineProblem]
    /// Replacements the scrubber made, per kind, over every good record.
    public var scrubbed: ScrubCounts
    /// Examples that went to the held-out split (by hash or by the minimum top-up).
    public var heldOut: Int
    public var tokensEstimated: Bool
    /// Conversations shortened to `ImportOptions.maxLength` by dropping their oldest turns.
    public var truncatedConversations: Int = 0
    /// Turns those conversations lost.
    public var turnsDropped: Int = 0
    /// After a committed import: the lineage's held-out pairs against what the gate needs (nil otherwise).
    public var gateReadiness: GateReadiness? = nil

    enum CodingKeys: String, CodingKey {
        case lineage, records, imported, duplicates, skipped, committed, problems, scrubbed
        case heldOut = "held_out", tokensEstimated = "tokens_estimated", gateReadiness = "gate_readiness"
        case truncatedConversations = "truncated_conversations", turnsDropped = "turns_dropped"
    }
}

/// How an import treats its input.
public struct ImportOptions: Sendable {
    /// Import the good lines and report the bad ones, instead of refusing the whole file.
    public var skipBad: Bool
    /// The source recorded for records that name none.
    public var source: String
    /// Put every new example in the held-out split instead of letting the id hash choose: for a held-out file
    /// a user keeps apart. Examples already stored keep their split; held out stays held out either way.
    public var heldOut: Bool = false
    /// The most tokens (as `tokenCounter` counts them) a conversation keeps: a longer one loses its oldest
    /// turns, keeping its system turns and its last exchange (`Conversation.truncated`). Nil: no limit.
    public var maxLength: Int? = nil
    /// The pairs the promotion gate needs (the pipeline's `eval.min_pairs`): while the lineage holds fewer
    /// held-out examples than this or its `min_held_out`, new examples go to held-out first.
    public var gateMinimum: Int = 0
    public var reader: JSONLReader
    public var scrubber: ScrubPipeline
    public var tokenCounter: any TokenCounter

    public init(skipBad: Bool = false, source: String = "import", reader: JSONLReader = JSONLReader(),
                scrubber: ScrubPipeline = .standard, tokenCounter: any TokenCounter = ByteEstimateTokenCounter()) {
        self.skipBad = skipBad
        self.source = source
        self.reader = reader
        self.scrubber = scrubber
        self.tokenCounter = tokenCounter
    }
}
