/// Byte-pair merging of one pre-tokenized word, on symbol ids.
///
/// A symbol is a vocabulary id, or a "synthetic" id past the vocabulary for the rare merge part or
/// result that is not itself a token. Merging follows llama.cpp (`llm_tokenizer_bpe_session`): take
/// the adjacent pair with the lowest merge rank, the leftmost on a tie, merge it, repeat. The fast
/// path keeps the pairs in a binary heap over a linked list of symbols, so a long word (a CJK run,
/// a line of dashes) costs O(n log n), not O(n²). Short words, nearly all of them, take a scan over
/// cached pair ranks in stack memory instead. `mergeNaive` is the obvious reference for both.
struct BytePairMerger {
    /// (left id << 32 | right id) → (rank << 32 | merged id).
    let merges: MergeTable

    // Buffers reused across the words of one encode call.
    private var ids: [Int32] = []
    private var next: [Int32] = []
    private var prev: [Int32] = []
    private var heap: [Entry] = []

    private struct Entry {
        var key: UInt64   // rank << 32 | left position: the heap order, lowest first
        var pair: UInt64  // left id << 32 | right id when the entry was pushed
    }

    init(merges: MergeTable) { self.merges = merges }

    @inline(__always) static func pairKey(_ left: Int32, _ right: Int32) -> UInt64 {
        UInt64(UInt32(bitPattern: left)) << 32 | UInt64(UInt32(bitPattern: right))
    }

    /// Merges `symbols` (one per byte of the word) and appends the final symbol ids to `output`.
    mutating func merge(_ symbols: UnsafeBufferPointer<Int32>, into output: inout [Int32]) {
        let n = symbols.count
        if n == 1 { output.append(symbols[0]); return }
        if n == 2 {
            if let value = merges[Self.pairKey(symbols[0], symbols[1])] {
                output.append(Int32(truncatingIfNeeded: value & 0xFFFF_FFFF))
            } else {
                output.append(symbols[0]); output.append(symbols[1])
            }
            return
        }
        if n <= Self.shortWord {
            mergeShort(symbols, into: &output)
            return
        }
        ids.removeAll(keepingCapacity: true)
        next.removeAll(keepingCapacity: true)
        prev.removeAll(keepingCapacity: true)
        heap.removeAll(keepingCapacity: true)
        ids.append(contentsOf: symbols)
        for i in 0..<n {
            next.append(i + 1 < n ? Int32(i + 1) : -1)
            prev.append(Int32(i - 1))
        }
        for i in 0..<(n - 1) { push(Int32(i)) }
        while let entry = pop() {
            let left = Int(entry.key & 0xFFFF_FFFF)
            let right = Int(next[left])
            // Stale when either side has merged since the entry was pushed (ids only grow longer, so an
            // unchanged id at an unchanged position means an unchanged symbol).
            guard right >= 0, ids[left] >= 0,
                  Self.pairKey(ids[left], ids[right]) == entry.pair,
                  let value = merges[entry.pair] else { continue }
            ids[left] = Int32(truncatingIfNeeded: value & 0xFFFF_FFFF)
            ids[right] = -1
            let after = next[right]
            next[left] = after
            if after >= 0 { prev[Int(after)] = Int32(left) }
            if prev[left] >= 0 { push(prev[left]) }
            if after >= 0 { push(Int32(left)) }
        }
        var i = 0
        while i >= 0 {
            output.append(ids[i])
            i = Int(next[i])
        }
    }

    /// Words up to this many bytes merge by scanning, longer ones through the heap.
    static let shortWord = 48

    /// Repeated scans for the lowest rank over ranks cached per adjacent pair; after a merge only the
    /// two pairs touching the merged symbol are looked up again.
    private func mergeShort(_ symbols: UnsafeBufferPointer<Int32>, into output: inout [Int32]) {
        let n = symbols.count
        withUnsafeTemporaryAllocation(of: Int32.self, capacity: n) { ids in
            withUnsafeTemporaryAllocation(of: UInt64.self, capacity: n) { ranks in
                // ranks[i]: (rank << 32 | merged id) of the pair (i, i + 1), or all ones when it does not merge.
                // Equal values mean the same pair, so the strict `<` below keeps the leftmost.
                var count = n
                for i in 0..<n { ids[i] = symbols[i] }
                for i in 0..<(n - 1) { ranks[i] = merges[Self.pairKey(ids[i], ids[i + 1])] ?? .max }
                while count > 1 {
                    var best = 0
                    for i in 1..<(count - 1) where ranks[i] < ranks[best] { best = i }
                    let value = ranks[best]
                    if value == .max { break }
                    ids[best] = Int32(truncatingIfNeeded: value & 0xFFFF_FFFF)
                    count -= 1
                    for j in (best + 1)..<max(best + 1, count) { ids[j] = ids[j + 1] }
                    for j in (best + 1)..<max(best + 1, count - 1) { ranks[j] = ranks[j + 1] }
                    ranks[best] = best + 1 < count ? merges[Self.pairKey(ids[best], ids[best + 1])] ?? .max : .max
                    if best > 0 { ranks[best - 1] = merges[Self.pairKey(ids[best - 1], ids[best])] ?? .max }
                }
                for i in 0..<count { output.append(ids[i]) }
            }
        }
    }

    /// The same result by repeated scans: the reference `merge` is tested against.
    func mergeNaive(_ symbols: [Int32]) -> [Int32] {
        var word = symbols
        while word.count > 1 {
            var best: (rank: UInt64, index: Int, id: Int32)?
            for i in 0..<(word.count - 1) {
                if let value = merges[Self.pairKey(word[i], word[i + 1])], value >> 32 < best?.rank ?? .max {
                    best = (value >> 32, i, Int32(truncatingIfNeeded: value & 0xFFFF_FFFF))
                }
            }
            guard let best else { break }
            word[best.index] = best.id
            word.remove(at: best.index + 1)
        }
        return word
    }

    private mutating func push(_ left: Int32) {
        let right = next[Int(left)]
        let pair = Self.pairKey(ids[Int(left)], ids[Int(right)])
        guard let value = merges[pair] else { return }
        heap.append(Entry(key: (value >> 32) << 32 | UInt64(UInt32(left)), pair: pair))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            if heap[parent].key <= heap[child].key { break }
            heap.swapAt(parent, child)
            child = parent
        }
    }

    private mutating func pop() -> Entry? {
        guard let top = heap.first else { return nil }
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            var parent = 0
            let count = heap.count
            while true {
                let left = 2 * parent + 1
                if left >= count { break }
                var smallest = left
                if left + 1 < count && heap[left + 1].key < heap[left].key { smallest = left + 1 }
                if heap[parent].key <= heap[smallest].key { break }
                heap.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return top
    }
}
