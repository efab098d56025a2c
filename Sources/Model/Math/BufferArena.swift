/// Float buffers recycled from one training pass to the next.
///
/// A recorded 256-token pass of SmolLM2-135M holds about 500 MB of activations; allocating them fresh every
/// step meant faulting in about 43,000 pages and zeroing every buffer on the calling thread while the rest
/// of the team waited (the arena's gain is in BENCHMARKS.md, code choices). Buffers
/// from an arena are not zeroed: every user writes them before reading them.
///
/// `@unchecked Sendable`: one pass at a time owns an arena (the model hands it over under its mutex).
final class BufferArena: @unchecked Sendable {
    private var free: [FloatBuffer] = []   // ascending count
    private var lent: [FloatBuffer] = []
    private var heldFloats = 0
    /// The most bytes the arena ever held at once: a training pass's activations and workspaces.
    private(set) var peakBytes = 0

    /// A buffer of at least `count` floats with unspecified contents: the smallest free one that fits without
    /// wasting more than its size again, or a new one.
    func take(_ count: Int) -> FloatBuffer {
        var lower = 0, upper = free.count
        while lower < upper {
            let middle = (lower + upper) / 2
            if free[middle].count < count { lower = middle + 1 } else { upper = middle }
        }
        let buffer: FloatBuffer
        if lower < free.count && free[lower].count <= 2 * count + 1024 {
            buffer = free.remove(at: lower)
        } else {
            buffer = FloatBuffer(uninitialized: count)
            heldFloats += count
            peakBytes = max(peakBytes, heldFloats * MemoryLayout<Float>.size)
        }
        lent.append(buffer)
        return buffer
    }

    /// Every buffer lent since the last call becomes free again (its user must be done with it) and free ones
    /// nobody took are released, so an arena keeps at most one pass's worth whatever the sequence lengths.
    func reclaim() {
        heldFloats -= free.reduce(0) { $0 + $1.count }
        free = lent.sorted { $0.count < $1.count }
        lent = []
    }
}
