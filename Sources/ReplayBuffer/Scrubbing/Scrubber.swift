/// The kind of personal data a scrubber removes; its placeholder is `[KIND]` (e.g. `[EMAIL]`).
///
/// A struct rather than an enum so a caller's own scrubber can name its own kind.
public struct ScrubKind: RawRepresentable, Hashable, Sendable, Comparable, Codable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let email = ScrubKind(rawValue: "email")
    public static let iban = ScrubKind(rawValue: "iban")
    public static let card = ScrubKind(rawValue: "card")
    public static let phone = ScrubKind(rawValue: "phone")

    /// The text that replaces each match: `[` + the upper-cased kind + `]`.
    public var placeholder: String { "[" + rawValue.uppercased() + "]" }

    public static func < (a: ScrubKind, b: ScrubKind) -> Bool { a.rawValue < b.rawValue }
}

/// Something that finds one kind of personal data in a text and replaces it.
public protocol Scrubber: Sendable {
    var kind: ScrubKind { get }
    /// The text with every match replaced by `kind.placeholder`, and how many matches there were.
    func scrub(_ text: String) -> (text: String, count: Int)
}

/// A scrubber that finds byte ranges in the UTF-8 of a text; replacing them is shared.
///
/// Every built-in scrubber looks only at ASCII, so replacing whole byte ranges of ASCII keeps UTF-8 valid.
public protocol SpanScrubber: Scrubber {
    /// Non-overlapping ranges in ascending order.
    func matches(in bytes: [UInt8]) -> [Range<Int>]
}

extension SpanScrubber {
    public func scrub(_ text: String) -> (text: String, count: Int) {
        let bytes = Array(text.utf8)
        let ranges = matches(in: bytes)
        guard !ranges.isEmpty else { return (text, 0) }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var cursor = 0
        let placeholder = Array(kind.placeholder.utf8)
        for range in ranges {
            out.append(contentsOf: bytes[cursor..<range.lowerBound])
            out.append(contentsOf: placeholder)
            cursor = range.upperBound
        }
        out.append(contentsOf: bytes[cursor...])
        return (String(decoding: out, as: UTF8.self), ranges.count)
    }
}

/// How many replacements each kind made.
public struct ScrubCounts: Sendable, Equatable, Codable {
    public private(set) var byKind: [String: Int] = [:]

    public init() {}

    public subscript(kind: ScrubKind) -> Int { byKind[kind.rawValue] ?? 0 }
    public var total: Int { byKind.values.reduce(0, +) }

    public mutating func add(_ kind: ScrubKind, _ count: Int) {
        guard count > 0 else { return }
        byKind[kind.rawValue, default: 0] += count
    }

    public mutating func add(_ other: ScrubCounts) {
        for (kind, count) in other.byKind { byKind[kind, default: 0] += count }
    }

    public init(from decoder: Decoder) throws { byKind = try [String: Int](from: decoder) }
    public func encode(to encoder: Encoder) throws { try byKind.encode(to: encoder) }
}

/// The ordered list of scrubbers every text passes through before it is stored.
///
/// Order matters: e-mail addresses first (their local parts may hold digits), then IBANs (their digits would
/// otherwise look like card or phone numbers), then cards, then phone numbers.
public struct ScrubPipeline: Sendable {
    public private(set) var scrubbers: [any Scrubber]

    public init(_ scrubbers: [any Scrubber]) { self.scrubbers = scrubbers }

    /// E-mail, IBAN, card and phone scrubbers.
    public static let standard = ScrubPipeline([EmailScrubber(), IBANScrubber(), CardScrubber(), PhoneScrubber()])

    /// This pipeline with `scrubber` run after the others.
    public func appending(_ scrubber: any Scrubber) -> ScrubPipeline {
        ScrubPipeline(scrubbers + [scrubber])
    }

    public func scrub(_ text: String) -> (text: String, counts: ScrubCounts) {
        var current = text
        var counts = ScrubCounts()
        for scrubber in scrubbers {
            let (next, count) = scrubber.scrub(current)
            current = next
            counts.add(scrubber.kind, count)
        }
        return (current, counts)
    }
}
