/// The rules for a phone number written as one run of digits (`2125550199`, `01154960625`), which an order
/// number, an invoice number, a ticket or an ISBN can look exactly like.
///
/// The shape alone takes a run as a phone number when a country's numbering plan writes it that way; the
/// context then keeps it when something says it is another kind of number: a preceding label (`order`,
/// `invoice`, `ref`, `ISBN`: `PhoneScrubber.labels`), a `#` right before it, a word glued to it by a dash
/// (`JIRA-12345`, `INV-2026-000123`, `ID-2125550199`), or a valid ISBN-10 check digit. One in eleven
/// ten-digit phone numbers also passes the ISBN-10 check: written with nothing around it, such a number is
/// kept (a word like `tel` or `call` before it still marks it as a phone number).
enum BareNumber {
    /// North American 10 digits (area code and exchange start with 2–9), the same after a `1` (11 digits),
    /// or 9 digits starting with 6–9 (Spain). Runs with a trunk `0` are `PhoneScrubber.isPhone`'s.
    static func isPhoneShaped(_ group: PhoneScrubber.Group, in bytes: [UInt8]) -> Bool {
        let digits = Array(bytes[group.start..<group.end])
        func digit(_ i: Int) -> Int { ASCII.digitValue(digits[i]) }
        switch digits.count {
        case 10: return (2...9).contains(digit(0)) && (2...9).contains(digit(3))
        case 11: return digit(0) == 1 && (2...9).contains(digit(1)) && (2...9).contains(digit(4))
        case 9: return (6...9).contains(digit(0))
        default: return false
        }
    }

    /// Ten digits whose weighted sum (10, 9, …, 1) is a multiple of 11: a valid ISBN-10.
    static func isISBN10(_ group: PhoneScrubber.Group, in bytes: [UInt8]) -> Bool {
        guard group.end - group.start == 10 else { return false }
        var sum = 0
        for (i, b) in bytes[group.start..<group.end].enumerated() { sum += (10 - i) * ASCII.digitValue(b) }
        return sum % 11 == 0
    }

    /// A `#` right before `start` (`#123456789`, a ticket), or a word joined by a dash (`JIRA-12345`).
    static func isIdentifierPart(at start: Int, in bytes: [UInt8]) -> Bool {
        guard start > 0 else { return false }
        let previous = bytes[start - 1]
        if previous == UInt8(ascii: "#") { return true }
        return previous == UInt8(ascii: "-") && ASCII.at(bytes, start - 2, ASCII.isLetter)
    }
}
