/// The merge ranks keyed by symbol pair: an open-addressing hash table on 64-bit keys.
///
/// Lookups dominate byte-pair merging (one per adjacent pair and two per merge), and the standard
/// `Dictionary` hashes with seeded SipHash; a multiplicative hash with linear probing over a table at
/// most half full does the same lookups several times faster.
struct MergeTable: Sendable {
    /// (left id << 32 | right id), or `empty`.
    private let keys: [UInt64]
    /// (rank << 32 | merged id) for the key at the same slot.
    private let values: [UInt64]
    private let shift: UInt64
    private let mask: Int
    let count: Int

    /// Pair keys never have the top bit set (ids are non-negative Int32), so all ones marks a free slot.
    private static let empty = UInt64.max

    init(_ entries: [UInt64: UInt64]) {
        var bits = 4
        while (1 << bits) < entries.count * 2 { bits += 1 }
        let capacity = 1 << bits
        var keys = [UInt64](repeating: Self.empty, count: capacity)
        var values = [UInt64](repeating: 0, count: capacity)
        let shift = UInt64(64 - bits)
        // Insert in key order so the layout does not depend on the dictionary's iteration order.
        for key in entries.keys.sorted() {
            var slot = Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> shift)
            while keys[slot] != Self.empty { slot = (slot + 1) & (capacity - 1) }
            keys[slot] = key
            values[slot] = entries[key]!
        }
        self.keys = keys
        self.values = values
        self.shift = shift
        self.mask = capacity - 1
        self.count = entries.count
    }

    /// The (rank << 32 | merged id) of a pair, if the pair merges.
    @inline(__always)
    subscript(key: UInt64) -> UInt64? {
        keys.withUnsafeBufferPointer { keys in
            var slot = Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> shift)
            while true {
                let found = keys[slot]
                if found == key { return values[slot] }
                if found == Self.empty { return nil }
                slot = (slot + 1) & mask
            }
        }
    }
}
