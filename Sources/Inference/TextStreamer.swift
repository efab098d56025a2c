/// Turns the bytes of generated tokens into text that is safe to show: complete UTF-8 only, and nothing that
/// could still turn out to be the start of a stop string.
///
/// Byte-level BPE tokens often end inside a multi-byte character, and a stop string can span several tokens.
/// Both are handled on bytes: a UTF-8 string occurs inside another only at a character boundary (RFC 3629 §3:
/// lead and continuation bytes never overlap), so matching stop strings byte by byte never cuts a character,
/// and the text held back is always a whole-character suffix.
public struct TextStreamer: Sendable {
    private let stops: [[UInt8]]
    private var pending: [UInt8] = []
    /// Everything handed out so far, as bytes.
    public private(set) var emitted: [UInt8] = []
    /// The stop string that ended the text, once one has matched.
    public private(set) var matchedStop: String?

    /// `stopStrings`: empty strings are ignored (they would match before any text).
    public init(stopStrings: [String]) {
        self.stops = stopStrings.filter { !$0.isEmpty }.map { Array($0.utf8) }
    }

    public var isStopped: Bool { matchedStop != nil }

    /// Takes one token's bytes; returns the text now safe to show (possibly empty).
    /// After a stop string matched, the text before it is returned once and every later call returns "".
    public mutating func append(_ bytes: [UInt8]) -> String {
        guard matchedStop == nil else { return "" }
        pending.append(contentsOf: bytes)
        if let (index, stop) = earliestStop() {
            matchedStop = String(decoding: stops[stop], as: UTF8.self)
            let text = Array(pending[..<index])
            pending.removeAll()
            return release(text)
        }
        let safe = min(Self.completeUTF8Prefix(pending), pending.count - longestStopPrefixSuffix())
        guard safe > 0 else { return "" }
        let text = Array(pending[..<safe])
        pending.removeFirst(safe)
        return release(text)
    }

    /// Ends the stream: whatever was held back is shown (an unfinished character becomes U+FFFD).
    public mutating func finish() -> String {
        guard matchedStop == nil, !pending.isEmpty else { return "" }
        let text = pending
        pending.removeAll()
        return release(text)
    }

    /// All text shown so far.
    public var text: String { String(decoding: emitted, as: UTF8.self) }

    private mutating func release(_ bytes: [UInt8]) -> String {
        emitted.append(contentsOf: bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The first position where a stop string starts, and which one (the first listed wins a tie).
    private func earliestStop() -> (Int, Int)? {
        var best: (Int, Int)?
        for (s, stop) in stops.enumerated() where stop.count <= pending.count {
            let limit = best.map { min($0.0, pending.count - stop.count) } ?? pending.count - stop.count
            var start = 0
            search: while start <= limit {
                for j in 0..<stop.count where pending[start + j] != stop[j] {
                    start += 1
                    continue search
                }
                if best == nil || start < best!.0 { best = (start, s) }
                break
            }
        }
        return best
    }

    /// The length of the longest suffix of `pending` that is a proper prefix of some stop string.
    private func longestStopPrefixSuffix() -> Int {
        var longest = 0
        for stop in stops {
            var length = min(stop.count - 1, pending.count)
            while length > longest {
                if pending[(pending.count - length)...].elementsEqual(stop[..<length]) {
                    longest = length
                    break
                }
                length -= 1
            }
        }
        return longest
    }

    /// How many leading bytes form complete UTF-8 sequences: an unfinished multi-byte character at the end is
    /// left out. Malformed bytes count as complete (they decode to U+FFFD rather than wait forever).
    static func completeUTF8Prefix(_ bytes: [UInt8]) -> Int {
        // Only the last three bytes can belong to an unfinished sequence of at most four.
        var i = bytes.count - 1
        let stop = max(0, bytes.count - 4)
        while i >= stop {
            let byte = bytes[i]
            if byte & 0xC0 != 0x80 {  // a lead byte or ASCII
                let length = byte < 0x80 ? 1 : byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1
                return bytes.count - i < length ? i : bytes.count
            }
            i -= 1
        }
        return bytes.count
    }
}
