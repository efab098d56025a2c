/// One word of a command line adapt prints for a person to paste into a shell (`llama-server -m MODEL …`).
///
/// A path is the user's to name: it may hold spaces, quotes, `$`, a newline, or an escape code a terminal acts
/// on. Printed bare, the pasted line runs something else; printed raw, the escape code reaches the terminal.
public enum ShellWord {
    /// `word` as the shell reads it back exactly: bare when every character is plain, in single quotes when it
    /// has no control character, else in bash's `$'…'` (also zsh and ksh) with each control character, C1
    /// control and bidirectional override written as `\xHH` escapes of its UTF-8 bytes, so the printed line
    /// holds none of them.
    public static func quoted(_ word: String) -> String {
        if !word.isEmpty, word.unicodeScalars.allSatisfy(isPlain) { return word }
        guard word.unicodeScalars.contains(where: needsEscape) else {
            // Inside single quotes nothing is special but the quote itself, which is closed, escaped and reopened.
            return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
        }
        var out = "$'"
        for scalar in word.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "'": out += "\\'"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            // Byte by byte in UTF-8: `\u` would depend on the shell's locale.
            case _ where needsEscape(scalar): out += String(scalar).utf8.map { "\\x" + hex(UInt32($0), width: 2) }.joined()
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "'"
    }

    /// Letters, digits and the punctuation no shell gives a meaning to in the middle of a word.
    static func isPlain(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9", "/", ".", "_", "-", "+", ":", "@", ",": return true
        default: return false
        }
    }

    /// C0 controls, DEL, C1 controls and the bidirectional overrides and isolates (the set `TerminalText` escapes).
    static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    private static func hex(_ value: UInt32, width: Int) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
