/// How a SentencePiece vocabulary (`tokenizer.ggml.model = llama`) turns text into ids, as llama.cpp's
/// `llm_tokenizer_spm_session` does.
///
/// Each stretch of text between special tokens gets one blank in front when `addSpacePrefix` is set and it
/// starts the text or follows a special token; every blank becomes `▁`; no other normalization. The stretch
/// starts as one symbol per UTF-8 character. Every adjacent pair whose concatenation is a vocabulary text is
/// queued with that token's score; the highest score merges first (ties: the leftmost pair), stale entries
/// are skipped, and the merged symbol queues its pairs with its new neighbours. A final symbol is its token,
/// or, when it is a lone character the vocabulary lacks, one `<0xNN>` byte token per UTF-8 byte.
struct SentencePieceRules: Sendable {
    /// Per token id (`tokenizer.ggml.scores`, 0 where the file has none).
    let scores: [Float]
    /// Token UTF-8 → id, the later id where two share a text. Keyed by bytes, not `String`: String equality is
    /// canonical equivalence, which would match an NFD text to an NFC piece that llama.cpp's byte-wise lookup
    /// does not.
    let ids: [[UInt8]: Int32]
    /// The byte-fallback token of each byte value.
    let byteTokens: [Int32]
    let addSpacePrefix: Bool

    static let blank: [UInt8] = [0xE2, 0x96, 0x81]  // U+2581 ▁

    func encode(_ fragments: [Tokenizer.Fragment], of bytes: UnsafeBufferPointer<UInt8>, into output: inout [Int32]) {
        var previousWasSpecial = true
        var merger = Merger()
        for fragment in fragments {
            switch fragment {
            case let .special(id):
                output.append(id)
                previousWasSpecial = true
            case let .text(range):
                var text: [UInt8] = []
                text.reserveCapacity(range.count * 3 + 3)
                if addSpacePrefix && previousWasSpecial { text += Self.blank }
                for byte in bytes[range] {
                    if byte == 0x20 { text += Self.blank } else { text.append(byte) }
                }
                merger.tokenize(text, rules: self, into: &output)
                previousWasSpecial = false
            }
        }
    }

    /// The working state of one stretch: symbols as byte ranges of the text in a linked list, and the queue.
    struct Merger {
        struct Symbol {
            var start: Int
            var length: Int  // 0 once merged into its left neighbour
            var previous: Int
            var next: Int
        }

        struct Candidate {
            let score: Float
            let left: Int
            let right: Int
            let length: Int

            /// Pops before `other`: a higher score, then the leftmost pair (llama.cpp's `llm_bigram_spm::comparator`).
            func precedes(_ other: Candidate) -> Bool {
                score != other.score ? score > other.score : left < other.left
            }
        }

        var symbols: [Symbol] = []
        var heap: [Candidate] = []

        mutating func tokenize(_ text: [UInt8], rules: SentencePieceRules, into output: inout [Int32]) {
            guard !text.isEmpty else { return }
            symbols.removeAll(keepingCapacity: true)
            heap.removeAll(keepingCapacity: true)
            var offset = 0
            while offset < text.count {
                // llama.cpp's unicode_len_utf8: the length a lead byte announces, cut at the end of the text.
                let length = min(Self.sequenceLength(text[offset]), text.count - offset)
                symbols.append(Symbol(start: offset, length: length, previous: symbols.count - 1,
                                      next: offset + length == text.count ? -1 : symbols.count + 1))
                offset += length
            }
            for index in 1..<max(1, symbols.count) { tryAdding(index - 1, index, text, rules) }
            while let best = pop() {
                let left = symbols[best.left], right = symbols[best.right]
                if left.length == 0 || right.length == 0 || left.length + right.length != best.length { continue }
                symbols[best.left].length += right.length
                symbols[best.right].length = 0
                symbols[best.left].next = right.next
                if right.next >= 0 { symbols[right.next].previous = best.left }
                tryAdding(symbols[best.left].previous, best.left, text, rules)
                tryAdding(best.left, symbols[best.left].next, text, rules)
            }
            var index = 0
            while index != -1 {
                let symbol = symbols[index]
                if let id = rules.ids[Array(text[symbol.start..<(symbol.start + symbol.length)])] {
                    output.append(id)
                } else {
                    // Only an unmerged character can miss: merges make vocabulary texts.
                    for byte in text[symbol.start..<(symbol.start + symbol.length)] { output.append(rules.byteTokens[Int(byte)]) }
                }
                index = symbol.next
            }
        }

        static func sequenceLength(_ lead: UInt8) -> Int {
            switch lead >> 4 {
            case 0xC, 0xD: return 2
            case 0xE: return 3
            case 0xF: return 4
            default: return 1
            }
        }

        private mutating func tryAdding(_ left: Int, _ right: Int, _ text: [UInt8], _ rules: SentencePieceRules) {
            guard left >= 0, right >= 0 else { return }
            let start = symbols[left].start, length = symbols[left].length + symbols[right].length
            guard let id = rules.ids[Array(text[start..<(start + length)])] else { return }
            push(Candidate(score: rules.scores[Int(id)], left: left, right: right, length: length))
        }

        private mutating func push(_ candidate: Candidate) {
            heap.append(candidate)
            var child = heap.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard heap[child].precedes(heap[parent]) else { break }
                heap.swapAt(child, parent)
                child = parent
            }
        }

        private mutating func pop() -> Candidate? {
            guard let first = heap.first else { return nil }
            let last = heap.removeLast()
            if !heap.isEmpty {
                heap[0] = last
                var parent = 0
                while true {
                    let left = 2 * parent + 1, right = left + 1
                    var best = parent
                    if left < heap.count && heap[left].precedes(heap[best]) { best = left }
                    if right < heap.count && heap[right].precedes(heap[best]) { best = right }
                    if best == parent { break }
                    heap.swapAt(parent, best)
                    parent = best
                }
            }
            return first
        }
    }
}
