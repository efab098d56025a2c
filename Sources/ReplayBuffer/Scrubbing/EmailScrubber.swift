/// Replaces e-mail addresses (`local@domain.tld`) with `[EMAIL]`.
///
/// The local part takes the characters RFC 5322's dot-atom allows that people actually use
/// (`A–Z a–z 0–9 . _ % + - '`) and any non-ASCII character (RFC 6531 internationalised addresses); the domain
/// needs at least two labels of letters, digits, non-ASCII characters and inner hyphens and a top-level label
/// of two or more ASCII letters (RFC 1035 labels). A trailing full stop ends the sentence, not the address.
public struct EmailScrubber: SpanScrubber {
    public init() {}
    public var kind: ScrubKind { .email }

    public func matches(in bytes: [UInt8]) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var lastEnd = 0
        var index = 0
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "@") else { index += 1; continue }
            if let range = address(around: index, in: bytes, notBefore: lastEnd) {
                ranges.append(range)
                lastEnd = range.upperBound
                index = range.upperBound
            } else {
                index += 1
            }
        }
        return ranges
    }

    private static func isLocal(_ b: UInt8) -> Bool {
        ASCII.isAlnum(b) || b >= 0x80 || b == UInt8(ascii: ".") || b == UInt8(ascii: "_") || b == UInt8(ascii: "%")
            || b == UInt8(ascii: "+") || b == UInt8(ascii: "-") || b == UInt8(ascii: "'")
    }

    private func address(around at: Int, in bytes: [UInt8], notBefore floor: Int) -> Range<Int>? {
        var start = at
        while start > floor, Self.isLocal(bytes[start - 1]) { start -= 1 }
        // Quotes and dots cannot open a local part ("'john@x.org'" keeps its quotes).
        while start < at, bytes[start] == UInt8(ascii: ".") || bytes[start] == UInt8(ascii: "'") { start += 1 }
        guard start < at, bytes[at - 1] != UInt8(ascii: ".") else { return nil }

        var end = at + 1
        while end < bytes.count, ASCII.isAlnum(bytes[end]) || bytes[end] >= 0x80 || bytes[end] == UInt8(ascii: "-") || bytes[end] == UInt8(ascii: ".") {
            end += 1
        }
        // Trim what cannot end a domain: the sentence's full stop, a dash.
        while end > at + 1, bytes[end - 1] == UInt8(ascii: ".") || bytes[end - 1] == UInt8(ascii: "-") { end -= 1 }
        let labels = bytes[(at + 1)..<end].split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard labels.count >= 2 else { return nil }
        for label in labels {
            guard !label.isEmpty, label.count <= 63, label.first != UInt8(ascii: "-"), label.last != UInt8(ascii: "-") else {
                return nil
            }
        }
        guard let top = labels.last, top.count >= 2, top.allSatisfy(ASCII.isLetter) else { return nil }
        return start..<end
    }
}
