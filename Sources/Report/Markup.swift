import Foundation

/// Escaping and number formatting for the page: every value that reaches the HTML goes through `text` or
/// `attribute`, so a name or an error message can never become markup.
enum Markup {
    static func text(_ value: String) -> String {
        var out = ""
        out.reserveCapacity(value.utf8.count)
        for character in value.unicodeScalars {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            // Control characters (a terminal escape in a message) are shown, not passed on.
            case _ where character.value < 0x20 && character != "\n" && character != "\t": out += "\u{FFFD}"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    static func attribute(_ value: String) -> String { text(value) }

    /// A coordinate: two decimals, no exponent, no locale.
    static func coordinate(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        return String(format: "%.2f", value)
    }

    /// A measured value for people: four significant digits.
    static func number(_ value: Double?) -> String {
        guard let value else { return "–" }
        guard value.isFinite else { return value.isNaN ? "nan" : value > 0 ? "∞" : "−∞" }
        if value != 0 && (abs(value) < 0.001 || abs(value) >= 1e6) { return String(format: "%.3g", value) }
        return String(format: "%.4g", value)
    }

    /// A duration in milliseconds for people: `850 ms`, `12.3 s`, `4 min 05 s`, `2 h 03 min`.
    static func duration(_ milliseconds: Int64) -> String {
        if milliseconds < 1_000 { return "\(milliseconds) ms" }
        let seconds = Double(milliseconds) / 1_000
        if seconds < 60 { return String(format: "%.1f s", seconds) }
        let whole = Int(seconds.rounded())
        if whole < 3_600 { return String(format: "%d min %02d s", whole / 60, whole % 60) }
        return String(format: "%d h %02d min", whole / 3_600, (whole % 3_600) / 60)
    }
}
