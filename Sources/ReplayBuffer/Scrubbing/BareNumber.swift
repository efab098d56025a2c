/// The rules for a phone number written as one run of digits (`2125550199`, `01154960625`), which an order
/// number, an invoice number, a ticket or an ISBN can look exactly like.
///
/// The shape alone takes a run as a phone number when a country's numbering plan writes it that way; the
/// context then keeps it when something says it is another kind of number: a label that names it (`order`,
/// `invoice`, `account`, `ref`, `ISBN`: `NumberLabel`), a `#` right before it, or a word glued to it by a dash
/// (`JIRA-12345`, `INV-2026-000123`, `ID-2125550199`). A valid ISBN-10 check digit alone does not keep it: one
/// ten-digit phone number in eleven passes that check, and a leaked phone number costs more than an unlabelled
/// ISBN shown as `[PHONE]`.
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

    /// A `#` right before `start` (`#123456789`, a ticket), or a word joined by a dash (`JIRA-12345`).
    static func isIdentifierPart(at start: Int, in bytes: [UInt8]) -> Bool {
        guard start > 0 else { return false }
        let previous = bytes[start - 1]
        if previous == UInt8(ascii: "#") { return true }
        return previous == UInt8(ascii: "-") && ASCII.at(bytes, start - 2, ASCII.isLetter)
    }
}
