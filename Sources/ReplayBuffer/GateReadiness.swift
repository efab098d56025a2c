/// Whether a lineage's held-out set is large enough for the promotion gate, and what to do when it is not.
///
/// Under `HeldOutSplit.Rule.fillFirst` every example imported while the set is short goes to held-out, so
/// `moreExamplesNeeded` new examples are exactly what it takes.
public struct GateReadiness: Sendable, Equatable, Codable {
    /// Held-out examples stored: the pairs the gate will compare.
    public let heldOut: Int
    /// The pairs the gate needs (the lineage's `min_held_out`, raised to the pipeline's `eval.min_pairs`).
    public let minPairs: Int

    public init(heldOut: Int, minPairs: Int) {
        self.heldOut = heldOut
        self.minPairs = minPairs
    }

    /// New examples to import before the gate can judge a candidate (0 when it already can).
    public var moreExamplesNeeded: Int { max(0, minPairs - heldOut) }
    public var canBeJudged: Bool { moreExamplesNeeded == 0 }

    /// E.g. "8 held-out pairs; the gate needs 10: import 2 more". Numbers and fixed words only.
    public var sentence: String {
        let pairs = "\(heldOut) held-out pair\(heldOut == 1 ? "" : "s"); the gate needs \(minPairs)"
        return canBeJudged ? pairs : pairs + ": import \(moreExamplesNeeded) more"
    }

    enum CodingKeys: String, CodingKey {
        case heldOut = "held_out", minPairs = "min_pairs", moreExamplesNeeded = "more_examples_needed"
        case canBeJudged = "can_be_judged", sentence
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(heldOut: try c.decode(Int.self, forKey: .heldOut), minPairs: try c.decode(Int.self, forKey: .minPairs))
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(heldOut, forKey: .heldOut)
        try c.encode(minPairs, forKey: .minPairs)
        try c.encode(moreExamplesNeeded, forKey: .moreExamplesNeeded)
        try c.encode(canBeJudged, forKey: .canBeJudged)
        try c.encode(sentence, forKey: .sentence)
    }
}
