/// The keys and values of every block for the positions processed so far, owned by the caller.
///
/// A value type: copy it to branch a conversation, `truncate(to:)` it to decode again from a prefix.
/// Keys are stored after RoPE. A cache belongs to the adapter it was filled with: feeding it to a pass with
/// another adapter mixes the two (switch adapters with a fresh cache, or truncate to before the first token).
/// Memory: 2 · L · Ckv floats per position (46 KB per token for SmolLM2-135M).
public struct KVCache: Sendable, Equatable {
    /// Positions held.
    public private(set) var count: Int = 0
    var keys: [[Float]] = []    // per block: (count, Ckv)
    var values: [[Float]] = []  // per block: (count, Ckv)

    public init() {}

    /// Keeps the first `positions` positions.
    public mutating func truncate(to positions: Int) {
        precondition(positions >= 0 && positions <= count, "cannot truncate a cache of \(count) positions to \(positions)")
        guard positions < count, !keys.isEmpty else { return }
        let width = keys[0].count / count
        for b in keys.indices {
            keys[b].removeSubrange((positions * width)...)
            values[b].removeSubrange((positions * width)...)
        }
        count = positions
    }

    public mutating func removeAll() { self = KVCache() }

    /// Bytes held.
    public var byteCount: Int { (keys.reduce(0) { $0 + $1.count } + values.reduce(0) { $0 + $1.count }) * MemoryLayout<Float>.size }

    mutating func append(block: Int, keys k: UnsafePointer<Float>, values v: UnsafePointer<Float>, floats: Int, blockCount: Int) {
        if keys.isEmpty {
            keys = Array(repeating: [], count: blockCount)
            values = Array(repeating: [], count: blockCount)
        }
        keys[block].append(contentsOf: UnsafeBufferPointer(start: k, count: floats))
        values[block].append(contentsOf: UnsafeBufferPointer(start: v, count: floats))
    }

    mutating func advance(by tokens: Int) { count += tokens }
}
