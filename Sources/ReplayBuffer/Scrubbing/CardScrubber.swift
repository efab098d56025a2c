/// Replaces payment card numbers with `[CARD]`: 12 to 19 digits, together or in groups separated by single
/// spaces or dashes (one kind per number), starting with an issuer digit 2–6 (ISO/IEC 7812: 2 and 5
/// Mastercard, 3 Amex/JCB/Diners, 4 Visa, 6 Discover/UnionPay/Maestro; also JCB's 15-digit 1800 range) and
/// passing the Luhn check.
///
/// Grouped numbers must open with a group of four (4-4-4-4, 4-6-5, 4-4-4-4-3 …), which keeps ISBNs and
/// reference numbers like `978-3-16-148410-0` out; a number glued to letters or decimals is not looked at.
public struct CardScrubber: SpanScrubber {
    public init() {}
    public var kind: ScrubKind { .card }

    struct Group { let start: Int; let end: Int }

    public func matches(in bytes: [UInt8]) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var index = 0
        while index < bytes.count {
            guard ASCII.isDigit(bytes[index]), ASCII.numberMayStart(bytes, at: index),
                  !(index > 0 && bytes[index - 1] == UInt8(ascii: "+")),
                  !Self.continuesNumber(bytes, index) || ranges.last?.upperBound == index - 1 else {
                index += 1
                continue
            }
            let groups = Self.groups(at: index, in: bytes)
            if let end = card(groups, in: bytes) {
                ranges.append(index..<end)
                index = end
            } else {
                index = groups.last!.end  // never match the tail of a longer number
            }
        }
        return ranges
    }

    /// True after `7 ` or `7-`: the digits belong to a longer grouped number (an IBAN whose check failed, a
    /// reference), and a card cut out of its middle would be a coincidence of the Luhn check. (Right after a
    /// card that was just matched is fine: two card numbers in a row.)
    static func continuesNumber(_ bytes: [UInt8], _ index: Int) -> Bool {
        index >= 2 && (bytes[index - 1] == UInt8(ascii: " ") || bytes[index - 1] == UInt8(ascii: "-"))
            && ASCII.isDigit(bytes[index - 2])
    }

    /// Digit groups joined by one separator kind (space or dash), as far as they go.
    static func groups(at start: Int, in bytes: [UInt8]) -> [Group] {
        var groups: [Group] = []
        var separator: UInt8?
        var index = start
        // A card has at most 19 digits; a run is looked at no further than its first seven groups.
        while groups.count < 7 {
            let groupStart = index
            while index < bytes.count, ASCII.isDigit(bytes[index]) { index += 1 }
            groups.append(Group(start: groupStart, end: index))
            guard index < bytes.count, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "-"),
                  separator == nil || separator == bytes[index], ASCII.at(bytes, index + 1, ASCII.isDigit) else { break }
            separator = bytes[index]
            index += 1
        }
        return groups
    }

    /// The end of the longest leading run of `groups` that is a card number, if any.
    private func card(_ groups: [Group], in bytes: [UInt8]) -> Int? {
        for count in stride(from: groups.count, through: 1, by: -1) {
            let used = groups[..<count]
            let sizes = used.map { $0.end - $0.start }
            let total = sizes.reduce(0, +)
            guard (12...19).contains(total) else { continue }
            if count > 1 {
                guard sizes[0] == 4, sizes.dropFirst().dropLast().allSatisfy({ (3...6).contains($0) }) else { continue }
            }
            let end = used.last!.end
            guard ASCII.numberMayEnd(bytes, at: end) else { continue }
            var digits: [Int] = []
            for group in used { digits += bytes[group.start..<group.end].map(ASCII.digitValue) }
            guard Self.plausibleIssuer(digits), Self.luhn(digits) else { continue }
            return end
        }
        return nil
    }

    /// Issuer digit 2–6, or JCB's older 15-digit `1800` range.
    static func plausibleIssuer(_ digits: [Int]) -> Bool {
        (2...6).contains(digits[0]) || (digits.count == 15 && digits.prefix(4) == [1, 8, 0, 0])
    }

    /// The Luhn (mod 10) check of ISO/IEC 7812-1: double every second digit from the right.
    static func luhn(_ digits: [Int]) -> Bool {
        var sum = 0
        for (offset, digit) in digits.reversed().enumerated() {
            if offset % 2 == 1 {
                let doubled = digit * 2
                sum += doubled > 9 ? doubled - 9 : doubled
            } else {
                sum += digit
            }
        }
        return sum % 10 == 0
    }
}
