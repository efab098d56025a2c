/// Replaces IBANs (ISO 13616) with `[IBAN]`: a known country code, two check digits and the country's BBAN
/// length, written together or in groups separated by single spaces, accepted only when the mod-97 check
/// of ISO 7064 gives 1. A code that fails the check (a typo, a product code) is left alone.
public struct IBANScrubber: SpanScrubber {
    public init() {}
    public var kind: ScrubKind { .iban }

    /// Total IBAN lengths per country from the SWIFT IBAN registry.
    static let lengths: [String: Int] = [
        "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BI": 27,
        "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27, "DK": 18, "DO": 28,
        "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
        "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27,
        "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25,
        "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18,
        "NO": 15, "OM": 23, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33,
        "SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28,
        "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
    ]

    public func matches(in bytes: [UInt8]) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var index = 0
        while index + 4 <= bytes.count {
            if ASCII.isLetter(bytes[index]), ASCII.isLetter(bytes[index + 1]), ASCII.isDigit(bytes[index + 2]),
               ASCII.isDigit(bytes[index + 3]), index == 0 || !ASCII.isWordByte(bytes[index - 1]),
               let end = iban(at: index, in: bytes) {
                ranges.append(index..<end)
                index = end
            } else {
                index += 1
            }
        }
        return ranges
    }

    private func iban(at start: Int, in bytes: [UInt8]) -> Int? {
        let country = String(decoding: [bytes[start], bytes[start + 1]].map { ASCII.isLower($0) ? $0 - 0x20 : $0 }, as: UTF8.self)
        guard let length = Self.lengths[country] else { return nil }
        var characters: [UInt8] = []
        var index = start
        while index < bytes.count, characters.count < length {
            let b = bytes[index]
            if ASCII.isAlnum(b) {
                characters.append(b)
                index += 1
            } else if b == UInt8(ascii: " "), !characters.isEmpty, ASCII.at(bytes, index + 1, ASCII.isAlnum) {
                index += 1
            } else {
                break
            }
        }
        guard characters.count == length, index == bytes.count || !ASCII.isWordByte(bytes[index]) else { return nil }
        return Self.mod97(characters) == 1 ? index : nil
    }

    /// ISO 7064 MOD 97-10 over the rearranged IBAN (the first four characters moved to the end, letters as
    /// 10–35), computed digit by digit so no big integer is needed.
    static func mod97(_ characters: [UInt8]) -> Int {
        var remainder = 0
        for b in characters[4...] + characters[..<4] {
            if ASCII.isDigit(b) {
                remainder = (remainder * 10 + ASCII.digitValue(b)) % 97
            } else {
                let value = Int(ASCII.lower(b)) - 0x61 + 10
                remainder = (remainder * 100 + value) % 97
            }
        }
        return remainder
    }
}
