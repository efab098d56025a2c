/// Replaces telephone numbers with `[PHONE]`.
///
/// A candidate is a run of digit groups, each plain (`7946`) or in parentheses (`(020)`, `(0)`), joined by a
/// single space, dash, dot or slash, optionally after a `+`. A run (or a part of it cut at a change of
/// separator) is a phone number when it has one of these shapes (ITU-T E.164 caps a number at 15 digits):
/// - international: `+` and 8–15 digits (`+44 20 7946 0958`, `+49(0)30 1234567`, `+33 1 23 45 67 89`);
/// - `00` and a country code, 10–15 digits in two or more groups (`0044 20 7946 0958`, `001-212-555-0199`);
/// - an area code in parentheses, 9–12 digits (`(555) 123-4567`, `(030) 1234567`, `(01632) 960123`);
/// - North American 3-3-4 with one separator, optionally after `1` (`555-123-4567`, `1.555.123.4567`);
/// - a national number with its trunk `0`: 9–12 digits in two or more groups of 2–8 with one separator
///   (`020 7946 0958`, `030 12345678`, `01 23 45 67 89`, `06-12345678`, `030/1234567`; the area code may
///   have its own separator, `020-7946 0958`), or 9–11 digits written together (`07700900123`, `0612345678`);
/// - written together without a trunk `0` (`BareNumber`): 10 digits in the North American plan (area code
///   and exchange start with 2–9: `2125550199`), 11 with its `1` (`12125550199`), or 9 starting with 6–9
///   (Spain's mobiles and landlines: `612345678`);
/// - Spanish 9 digits starting with 6–9 grouped 3-2-2-2, 3-3-3 or 2-3-2-2 (`612 34 56 78`, `612 345 678`,
///   `91 123 45 67`);
/// - after a word that announces a number (`tel`, `phone`, `call`, `mobile`, `fax`, `Telefon`, `tél`, …):
///   7–15 digits in any of the groupings above (`phone 5551234567`, `móvil 612 345 678`).
/// An extension (`x123`, ` ext. 12`, ` ext 12`, ` extension 12`, ` #12`: up to five digits) goes with its
/// number and is replaced with it: it is the part that reaches one person. `#` counts as an extension only
/// right after a phone number; a number that starts with `#` is a ticket or an order (`#123456789`).
/// A number without an international prefix, a parenthesised area code or an extension may be another kind of
/// number, so context decides: it is kept when a word names it (`order 0123456789`, `Invoice no. 0123456789`,
/// `account number: 0123 4567 89`: `NumberLabel`), and a bare run also after `#` or glued to an identifier
/// (`JIRA-…`, `ID-…`: `BareNumber`). A label anywhere else in the sentence (`send the invoice to 01154960625`)
/// keeps nothing, and no label keeps `(0115) 4960625`, `0115 496 0625 x12` or `+44 …` (issue 41). Dates
/// (`2024-01-15`, `15.01.2024`), times, versions, IP addresses, amounts and ISBN-13s do not have these shapes.
public struct PhoneScrubber: SpanScrubber {
    public init() {}
    public var kind: ScrubKind { .phone }

    struct Group {
        let start: Int
        let end: Int
        let digits: Int
        let paren: Bool
        /// The separator before this group; 0 when none (the first group, or one glued to a parenthesis).
        let separatorBefore: UInt8
        let firstDigit: UInt8
        let secondDigit: UInt8?
    }

    /// Words that announce a phone number; `*` marks a stem (`telefon*` covers Telefonnummer, telefono).
    static let cues: [[UInt8]] = [
        "tel", "tel.", "tél", "phone*", "call*", "mobile", "mobil*", "cell*", "fax", "whatsapp", "sms", "text me", "ring",
        "dial*", "reach me", "telefon*", "teléfon*", "téléphone", "portable", "handy*", "móvil", "movil", "cellulare",
        "telefoon*", "mob", "contact*", "appel*", "llam*", "llám*", "chiam*", "bel me", "ruf*", "anruf*", "rufnummer",
    ].map { Array($0.utf8) }

    public func matches(in bytes: [UInt8]) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var index = 0
        while index < bytes.count {
            let b = bytes[index]
            let opens = ASCII.isDigit(b) || b == UInt8(ascii: "(")
                || (b == UInt8(ascii: "+") && (ASCII.at(bytes, index + 1, ASCII.isDigit) || ASCII.at(bytes, index + 1, { $0 == UInt8(ascii: "(") })))
            guard opens, ASCII.numberMayStart(bytes, at: index) else {
                index += 1
                continue
            }
            let plus = b == UInt8(ascii: "+")
            let groups = Self.groups(at: plus ? index + 1 : index, in: bytes)
            guard !groups.isEmpty else { index += 1; continue }
            if let range = phone(groups, plus: plus, runStart: index, in: bytes) {
                ranges.append(range)
                index = range.upperBound
            } else {
                index = max(groups.last!.end, index + 1)
            }
        }
        return ranges
    }

    /// Digit groups from `start`, as far as they are joined by single separators or parentheses.
    static func groups(at start: Int, in bytes: [UInt8]) -> [Group] {
        var groups: [Group] = []
        var index = start
        var separator: UInt8 = 0
        while groups.count < 10 {
            let groupStart = index
            var paren = false
            if ASCII.at(bytes, index, { $0 == UInt8(ascii: "(") }) {
                var close = index + 1
                while close < bytes.count, ASCII.isDigit(bytes[close]) { close += 1 }
                guard close - index - 1 >= 1, close - index - 1 <= 5, ASCII.at(bytes, close, { $0 == UInt8(ascii: ")") }) else { break }
                paren = true
                index = close + 1
            } else if ASCII.at(bytes, index, ASCII.isDigit) {
                while index < bytes.count, ASCII.isDigit(bytes[index]) { index += 1 }
            } else {
                break
            }
            let digitStart = paren ? groupStart + 1 : groupStart
            let digitEnd = paren ? index - 1 : index
            groups.append(Group(start: groupStart, end: index, digits: digitEnd - digitStart, paren: paren,
                                separatorBefore: separator, firstDigit: bytes[digitStart],
                                secondDigit: digitEnd - digitStart > 1 ? bytes[digitStart + 1] : nil))
            // What joins this group to the next: a parenthesis may be glued on either side; anything else takes
            // exactly one separator.
            if paren, ASCII.at(bytes, index, ASCII.isDigit) { separator = 0; continue }
            if ASCII.at(bytes, index, { $0 == UInt8(ascii: "(") }) { separator = 0; continue }
            guard index + 1 < bytes.count, [UInt8(ascii: " "), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "/")].contains(bytes[index]),
                  ASCII.isDigit(bytes[index + 1]) || bytes[index + 1] == UInt8(ascii: "(") else { break }
            separator = bytes[index]
            index += 1
        }
        return groups
    }

    /// The first (earliest, then longest) slice of the run that is a phone number, with its extension.
    private func phone(_ groups: [Group], plus: Bool, runStart: Int, in bytes: [UInt8]) -> Range<Int>? {
        // Digits before each group, so a slice's digit count is one subtraction; no rule takes fewer than 7 or
        // more than 15 digits, which rules out most slices before any work.
        var before = [0]
        for group in groups { before.append(before.last! + group.digits) }
        for first in 0..<groups.count {
            let hasPlus = plus && first == 0
            let start = hasPlus ? runStart : groups[first].start
            // The word checks look back over a few bytes; do them at most once per start, and only when needed.
            var labelled: Bool?
            var cued: Bool?
            for last in stride(from: groups.count - 1, through: first, by: -1) {
                guard (7...15).contains(before[last + 1] - before[first]) else { continue }
                let slice = Array(groups[first...last])
                if first > 0, !cutAtSeparatorChange(groups, first, slice) { continue }
                if last < groups.count - 1, !cutAtSeparatorChange(groups, last + 1, slice) { continue }
                let bare = !hasPlus && slice.count == 1 && !slice[0].paren
                var accepted = Self.isPhone(slice, plus: hasPlus, cue: false)
                if bare {
                    accepted = accepted || BareNumber.isPhoneShaped(slice[0], in: bytes)
                }
                if !accepted, Self.cueCouldDecide(slice) {
                    if cued == nil { cued = ASCII.cue(Self.cues, before: start, in: bytes, window: 24) }
                    accepted = cued! && Self.isPhone(slice, plus: hasPlus, cue: true)
                }
                guard accepted, !bare || !BareNumber.isIdentifierPart(at: start, in: bytes) else { continue }
                let end = Self.extensionEnd(after: slice.last!.end, in: bytes)
                guard ASCII.numberMayEnd(bytes, at: end) else { continue }
                // A label keeps only a number whose shape leaves room for doubt, and only one it names.
                if !Self.saysPhoneByItself(slice, plus: hasPlus, extended: end > slice.last!.end, in: bytes) {
                    if labelled == nil { labelled = NumberLabel.namesNumber(at: start, in: bytes) }
                    if labelled! { continue }
                }
                return start..<end
            }
        }
        return nil
    }

    /// A shape no order, invoice or account number takes: an international prefix (`+44 …`, or `00` and an
    /// assigned country code, `0044 …`), an area code in parentheses, or an extension (`… x12`). No word before it
    /// makes it anything but a phone number (issue 41: `send the invoice to (0115) 4960625` leaked).
    static func saysPhoneByItself(_ slice: [Group], plus: Bool, extended: Bool, in bytes: [UInt8]) -> Bool {
        if plus || extended || slice.contains(where: { $0.paren }) { return true }
        let first = slice[0]
        guard slice.count >= 2, first.digits >= 3, first.firstDigit == UInt8(ascii: "0"), first.secondDigit == UInt8(ascii: "0") else {
            return false
        }
        return CountryCode.isAssigned(bytes[(first.start + 2)..<first.end])
    }

    /// Whether a preceding word could make `slice` a phone number (the last rule of `isPhone`).
    static func cueCouldDecide(_ slice: [Group]) -> Bool {
        let digits = slice.reduce(0) { $0 + $1.digits }
        return (7...15).contains(digits) && slice.count <= 6
    }

    /// A slice may be cut out of a longer run only where the separator differs from the one inside it
    /// (`on 2024-01-15 020 7946 0958`), never in the middle of a uniformly written number.
    private func cutAtSeparatorChange(_ groups: [Group], _ boundary: Int, _ slice: [Group]) -> Bool {
        let at = groups[boundary].separatorBefore
        return at != 0 && !slice.dropFirst().contains { $0.separatorBefore == at }
    }

    static func isPhone(_ slice: [Group], plus: Bool, cue: Bool) -> Bool {
        let digits = slice.reduce(0) { $0 + $1.digits }
        let sizes = slice.map(\.digits)
        // Separators that must agree: not those glued to parentheses, not the one after a country code.
        var inner: [UInt8] = []
        for i in slice.indices.dropFirst() where !slice[i].paren && !slice[i - 1].paren && slice[i].separatorBefore != 0 {
            inner.append(slice[i].separatorBefore)
        }
        if plus, slice.count > 1, !slice[1].paren, !slice[0].paren, slice[1].separatorBefore != 0, !inner.isEmpty { inner.removeFirst() }
        let consistent = Set(inner).count <= 1
        let dots = inner.contains(UInt8(ascii: "."))
        let anyParen = slice.contains { $0.paren }
        let zero = UInt8(ascii: "0")

        if isDateShaped(slice) { return false }
        if plus {
            guard (8...15).contains(digits), slice[0].firstDigit != zero else { return false }
            if slice.count == 1 { return digits >= 10 }
            return !dots || slice.count >= 3
        }
        // The area code may be set off by its own separator (`020-7946 0958`, `030/123 456`); the rest must agree.
        let restConsistent = Set(inner.dropFirst()).count <= 1
        if !anyParen, slice[0].firstDigit == zero, slice[0].secondDigit != zero, slice[0].secondDigit != nil,
           slice.count >= 3, restConsistent, !consistent, (9...12).contains(digits), (2...5).contains(sizes[0]),
           sizes.allSatisfy({ (2...8).contains($0) }), inner.first != UInt8(ascii: ".") {
            return true
        }
        guard consistent else { return false }
        if slice[0].paren, (2...5).contains(slice[0].digits), slice.count >= 2, (9...12).contains(digits) { return true }
        if !slice[0].paren, slice[0].firstDigit == zero, slice[0].secondDigit == zero, (3...5).contains(slice[0].digits),
           slice.count >= 2, (10...15).contains(digits) {
            return true
        }
        if !anyParen, sizes == [3, 3, 4] || (sizes == [1, 3, 3, 4] && slice[0].firstDigit == UInt8(ascii: "1")),
           inner.allSatisfy({ $0 != UInt8(ascii: "/") }) {
            return true
        }
        if !anyParen, slice[0].firstDigit == zero, slice[0].secondDigit != zero, slice[0].secondDigit != nil {
            if slice.count == 1, (9...11).contains(digits) { return true }
            if slice.count >= 2, (9...12).contains(digits), (2...5).contains(sizes[0]), sizes.allSatisfy({ (2...8).contains($0) }) {
                return true
            }
        }
        // Spanish numbers are written 3-2-2-2 (`612 34 56 78`); amounts and dates never are. Mobiles are also
        // written 3-3-3 (`612 345 678`) and landlines 2-3-2-2 (`91 123 45 67`), with spaces or dashes; an amount
        // of 600 million or more written with spaces (`612 345 678 €`) is the price of catching them.
        let spanishFirstDigit = (UInt8(ascii: "6")...UInt8(ascii: "9")).contains(slice[0].firstDigit)
        if !anyParen, sizes == [3, 2, 2, 2], spanishFirstDigit { return true }
        if !anyParen, sizes == [3, 3, 3] || sizes == [2, 3, 2, 2], spanishFirstDigit,
           inner.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "-") }) {
            return true
        }
        if cue, (7...15).contains(digits), slice.count <= 6, slice[0].firstDigit != zero || slice[0].secondDigit != zero {
            return true
        }
        return false
    }

    /// 2024-01-15, 15.01.2024, 01/15/24: never a phone number, whatever word precedes it.
    static func isDateShaped(_ slice: [Group]) -> Bool {
        let sizes = slice.map(\.digits)
        guard !slice.contains(where: { $0.paren }) else { return false }
        return sizes == [4, 2, 2] || sizes == [2, 2, 4] || sizes == [2, 2, 2] || sizes == [1, 1, 4] || sizes == [2, 1, 4]
            || sizes == [1, 2, 4] || sizes == [4, 1, 1] || sizes == [4, 2, 1] || sizes == [4, 1, 2]
    }

    /// `x123`, ` x123`, ` ext. 123`, ` ext 123`, `, ext. 12`, ` extension 12`, ` #12`: up to five digits.
    static func extensionEnd(after end: Int, in bytes: [UInt8]) -> Int {
        for marker in ["x", " x", " ext. ", " ext.", " ext ", ", ext. ", ", ext ", " extension ", ", extension ", " #", " # "] {
            let m = Array(marker.utf8)
            guard end + m.count < bytes.count, Array(bytes[end..<(end + m.count)]).map(ASCII.lower) == m else { continue }
            var index = end + m.count
            let digitStart = index
            while index < bytes.count, ASCII.isDigit(bytes[index]), index - digitStart < 6 { index += 1 }
            if (1...5).contains(index - digitStart) { return index }
        }
        return end
    }
}
