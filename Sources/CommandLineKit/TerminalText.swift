/// Makes stored text safe to print on a terminal for people.
///
/// Imported examples, run names and error messages can hold bytes a terminal acts on: ESC starts sequences that
/// retitle the window, move the cursor or clear the screen; C1 controls (U+0080–U+009F) do the same on some
/// terminals; and the bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069) reorder what follows
/// so a line reads differently from what it holds. Each becomes a visible escape: `\x1b`, `\x7f`, `\u{9b}`,
/// `\u{202e}`. A backslash is left as it is: the escapes are for reading, not for parsing back. `--json`
/// output never goes through here; JSON's own escaping covers C0, and the characters above are kept exactly.
public enum TerminalText {
    /// `text` with every control character and bidi override escaped; `keepingNewlines` leaves `\n` for
    /// messages of several lines (a table cell or a one-line field escapes it).
    public static func escaped(_ text: String, keepingNewlines: Bool = false) -> String {
        guard text.unicodeScalars.contains(where: { needsEscape($0, keepingNewlines: keepingNewlines) }) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if needsEscape(scalar, keepingNewlines: keepingNewlines) {
                out.append(contentsOf: escape(scalar).unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    static func needsEscape(_ scalar: Unicode.Scalar, keepingNewlines: Bool) -> Bool {
        switch scalar.value {
        case 0x0A: return !keepingNewlines
        case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    static func escape(_ scalar: Unicode.Scalar) -> String {
        switch scalar.value {
        case 0x0A: return "\\n"
        case 0x0D: return "\\r"
        case 0x09: return "\\t"
        case 0x00...0x7F: return "\\x" + hex(scalar.value, width: 2)
        default: return "\\u{" + hex(scalar.value, width: 1) + "}"
        }
    }

    private static func hex(_ value: UInt32, width: Int) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
