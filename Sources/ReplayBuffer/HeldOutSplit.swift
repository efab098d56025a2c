import AdaptCore
import Storage

/// The held-out split, pinned to the lineage (DESIGN.md, "The held-out set is chosen by a stable hash of
/// each example's id and pinned to the lineage: it is never trained on, and it only grows").
///
/// - An example's key is the first 8 bytes of SHA-256("heldout:" + id), read as a big-endian integer; it is
///   held out when key / 2^64 < the lineage's fraction at the time it is first stored. The split is stored
///   with the example and never recomputed, so changing the fraction later moves nothing back to train.
/// - Small lineages: while fewer than `min(minHeldOut, examples / 2)` examples are held out, train examples
///   that have never been used for training move to held-out, lowest key first. A used example never moves
///   (it would no longer be unseen), and nothing ever moves from held-out to train.
public enum HeldOutSplit {
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

    /// Tops the held-out set of `lineage` up to its minimum; returns how many examples moved.
    @discardableResult
    static func topUp(_ db: Database, lineage: String, policy: LineagePolicy) throws -> Int {
        let total = try ExampleTable.count(db, lineage: lineage)
        let held = try ExampleTable.count(db, lineage: lineage, split: .heldOut)
        let target = min(policy.minHeldOut, total / 2)
        guard held < target else { return 0 }
        return try ExampleTable.promoteUnusedToHeldOut(db, lineage: lineage, count: target - held)
    }
}
