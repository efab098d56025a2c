/// Country calling codes assigned in ITU-T E.164, enough to tell `0044 20 7946 0958` (dialled from abroad: `00`,
/// then the United Kingdom's 44) from a serial number that merely starts with zeros (`0012-3456-7890`: no country
/// has the code 12).
enum CountryCode {
    /// The one- and two-digit codes.
    static let short: Set<Int> = [
        1, 7, 20, 27, 30, 31, 32, 33, 34, 36, 39, 40, 41, 43, 44, 45, 46, 47, 48, 49, 51, 52, 53, 54, 55, 56, 57, 58,
        60, 61, 62, 63, 64, 65, 66, 81, 82, 84, 86, 90, 91, 92, 93, 94, 95, 98,
    ]
    /// The first two digits of the three-digit codes (`21x` North Africa, `35x` the rest of Europe, …).
    static let threeDigitZones: Set<Int> = [21, 22, 23, 24, 25, 26, 29, 35, 37, 38, 42, 50, 59, 67, 68, 69, 80, 85, 87, 88, 96, 97, 99]

    /// True when `digits` (ASCII, without the `00` or `+` before it) is exactly an assigned code.
    static func isAssigned(_ digits: ArraySlice<UInt8>) -> Bool {
        let value = digits.reduce(0) { $0 * 10 + ASCII.digitValue($1) }
        switch digits.count {
        case 1, 2: return digits.first != UInt8(ascii: "0") && short.contains(value)
        case 3: return digits.first != UInt8(ascii: "0") && !short.contains(value / 10) && threeDigitZones.contains(value / 10)
        default: return false
        }
    }
}
