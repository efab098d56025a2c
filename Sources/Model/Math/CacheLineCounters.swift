import Synchronization

/// Atomic counters, each alone on its own pair of cache lines (128 bytes, what the adjacent-line prefetcher
/// pulls in together), so that counters written by different threads never share a line.
final class CacheLineCounters: @unchecked Sendable {
    private static let stride = 128
    private let base: UnsafeMutableRawPointer
    let count: Int

    init(_ count: Int) {
        self.count = count
        base = UnsafeMutableRawPointer.allocate(byteCount: count * Self.stride, alignment: Self.stride)
        for i in 0..<count {
            (base + i * Self.stride).bindMemory(to: Atomic<Int>.self, capacity: 1).initialize(to: Atomic(0))
        }
    }

    subscript(_ index: Int) -> UnsafeMutablePointer<Atomic<Int>> {
        precondition(index >= 0 && index < count)
        return (base + index * Self.stride).assumingMemoryBound(to: Atomic<Int>.self)
    }

    deinit {
        for i in 0..<count { self[i].deinitialize(count: 1) }
        base.deallocate()
    }
}
