import AdaptCore

/// Which side of the pinned split an example is on.
public enum Split: String, Sendable, Codable, CaseIterable {
    case train
    case heldOut = "held_out"
}

/// One stored training example, already scrubbed.
public struct Example: Sendable, Equatable {
    /// Stable: `ExampleID.make` over the lineage and the scrubbed text (every turn of a conversation), so
    /// re-importing a line is a no-op.
    public let id: String
    public let lineage: String
    /// The system message of a chat record, when it had one (nil otherwise).
    public let system: String?
    /// The last user message of a chat record, the prompt of a prompt/completion record, "" for a text record.
    public let prompt: String
    public let completion: String
    public let source: String
    /// How much the example counts in the training loss, within `Example.weightRange`.
    public let weight: Double
    /// Tokens of every turn (system + prompt + completion for a single exchange); an estimate unless
    /// `tokenCountExact`.
    public let tokenCount: Int
    public let tokenCountExact: Bool
    public let split: Split
    /// Milliseconds since the epoch.
    public let createdAt: Int64
    public let expiresAt: Int64
    /// Nights whose training set included this example.
    public let uses: Int
    /// Every turn, in order, of a conversation of more than one exchange; nil for a single exchange, whose
    /// turns are its system, prompt and completion (`conversation`).
    public var turns: [Turn]? = nil
    /// When the example was quarantined (kept out of training after a `worse` night blamed its source), nil when
    /// it may be sampled; `quarantinedNight` is the night of the run that quarantined it.
    public var quarantinedAt: Int64? = nil
    public var quarantinedNight: String? = nil

    /// The whole conversation: the stored turns, or the single exchange's.
    public var conversation: [Turn] {
        turns ?? Conversation.turns(system: system, prompt: prompt, completion: completion)
    }
}

extension Example {
    /// The weights an import accepts: 1e-6 to 1e6. The trainer scales each example's loss by its weight in
    /// Float, so weights must stay far from Float's limits (1e39 is infinite and 1e-46 is zero in Float) and
    /// their sum over a batch must stay finite; six orders of magnitude either way of 1 is more than any
    /// weighting scheme needs. The trainer's data reader applies the same range.
    public static let weightRange: ClosedRange<Double> = 1e-6...1e6
}

/// How example ids are made.
public enum ExampleID {
    /// The first 32 hex characters (128 bits) of SHA-256 over the lineage and the scrubbed fields, each
    /// separated by a NUL (which no stored field may contain), so no two different examples can share
    /// an input. `system == nil` and `system == ""` differ on purpose (the chat formatter treats them apart).
    public static func make(lineage: String, system: String?, prompt: String, completion: String, source: String) -> String {
        let systemPart = system.map { "s" + $0 } ?? "-"
        let text = ["example/v1", lineage, systemPart, prompt, completion, source].joined(separator: "\u{0}")
        return String(Digest.sha256(text).hex.prefix(32))
    }
}
