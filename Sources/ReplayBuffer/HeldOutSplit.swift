import AdaptCore
import Storage

/// The held-out split, pinned to the lineage (DESIGN.md, "The held-out set is chosen by a stable hash of
/// each example's id and pinned to the lineage: it is never trained on, and it only grows").
///
/// - An example's key is the first 8 bytes of SHA-256("heldout:" + id), read as a big-endian integer; it is
///   held out when key / 2^64 < the lineage's fraction at the time it is first stored. The split is stored
///   with the example and never recomputed, so changing the fraction later moves nothing back to train.
/// - The minimum (`Rule`): while a lineage holds fewer held-out examples than its minimum, train examples
///   that have never been used for training move to held-out. A used example never moves (it would no
///   longer be unseen), and nothing ever moves from held-out to train.
public enum HeldOutSplit {
    /// How the minimum is kept. A run's manifest records the rule its sample step applied (`held_out_rule`;
    /// absent means `.halfCapped`), so replaying a run recorded before `.fillFirst` draws the same held-out set.
    public enum Rule: Int, Sendable, Codable, CaseIterable {
        /// Up to `min(min_held_out, examples / 2)`, lowest key first. A lineage of 40 examples at 20 % with
        /// minimum 8 held out 8, fewer than a gate asking for 10 pairs could ever judge.
        case halfCapped = 1
        /// Up to the gate's minimum, with no cap: the examples of the current import first (lowest key
        /// first), then older unused ones. Until the minimum is reached every new example is held out, so
        /// "import k more" is exact; past it the configured fraction applies. Picking the lowest keys of an
        /// import first gives the same set as deciding each new example in key order (the hash-held ones
        /// are the lowest keys of the import already).
        case fillFirst = 2

        /// The rule new runs record and imports apply.
        public static let current = Rule.fillFirst
    }

    /// The 16-hex-digit key (sorts like the integer it spells).
    public static func key(id: String) -> String {
        String(Digest.sha256("heldout:" + id).hex.prefix(16))
    }

    /// The position of the key in [0, 1).
    public static func position(id: String) -> Double {
        Double(UInt64(key(id: id), radix: 16) ?? 0) / 18_446_744_073_709_551_616.0
    }

    public static func initialSplit(id: String, fraction: Double) -> Split {
        position(id: id) < fraction ? .heldOut : .train
    }

    /// The held-out size `rule` keeps `lineage` at, given its policy and the gate's minimum.
    static func target(_ db: any SQLConnection, lineage: String, policy: LineagePolicy, gateMinimum: Int, rule: Rule) throws -> Int {
        switch rule {
        case .halfCapped:
            return min(policy.minHeldOut, try ExampleTable.count(db, lineage: lineage) / 2)
        case .fillFirst:
            return max(policy.minHeldOut, gateMinimum)
        }
    }

    /// Tops the held-out set of `lineage` up to its minimum under `rule`; returns how many examples moved.
    /// `gateMinimum` (the pipeline's `eval.min_pairs`) can only raise the policy's `min_held_out`;
    /// `.halfCapped` ignores it, as it did. `preferringImport`: the examples of that import move first.
    @discardableResult
    static func topUp(_ db: any SQLConnection, lineage: String, policy: LineagePolicy, gateMinimum: Int = 0,
                      rule: Rule = .current, preferringImport importID: Int64? = nil) throws -> Int {
        let held = try ExampleTable.count(db, lineage: lineage, split: .heldOut)
        let target = try target(db, lineage: lineage, policy: policy, gateMinimum: gateMinimum, rule: rule)
        guard held < target else { return 0 }
        return try ExampleTable.promoteUnusedToHeldOut(db, lineage: lineage, count: target - held,
                                                       preferringImport: rule == .fillFirst ? importID : nil)
    }
}
