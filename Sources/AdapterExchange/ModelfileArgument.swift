import Adapters

/// A value written into an Ollama Modelfile (`FROM PATH`), quoted so Ollama reads back exactly that value.
///
/// A Modelfile is line-based: a bare value ends at the first space or newline, and what follows a newline is
/// read as the next instruction, so a model file named `x.gguf\nSYSTEM …` would add a system prompt. Ollama's
/// parser (parser/parser.go) has two quoted forms and no escapes: `"…"`, which ends at the first `"` that is
/// followed by a space or line end, and `"""…"""`, which ends at the first `"""` so followed; both may span
/// lines. It drops characters that are not printable (controls other than tab and line ends, and the
/// Unicode format and separator characters but the ASCII space), and trims spaces around the whole value.
enum ModelfileArgument {
    /// `value` bare when it has no space, quote or line end; else in the quoted form that holds it. Throws
    /// `AdapterExchangeError.io` for a value no form can hold: one with `"""` or a character Ollama drops.
    static func quoted(_ value: String, naming what: String) throws -> String {
        guard !value.isEmpty, !value.contains("\"\"\""), value.unicodeScalars.allSatisfy(survivesParsing) else {
            throw AdapterExchangeError.io("\(what) cannot be written in an Ollama Modelfile: its path holds \"\"\", a control "
                                          + "character or an invisible one, which Ollama would not read back; rename the file")
        }
        let ends: Set<Unicode.Scalar> = [" ", "\t", "\n", "\r"]
        if !value.unicodeScalars.contains(where: { ends.contains($0) || $0 == "\"" }) { return value }
        if !value.contains("\"") { return "\"" + value + "\"" }
        return "\"\"\"" + value + "\"\"\""
    }

    /// Whether Ollama keeps `scalar` inside a quoted value: Go's `strconv.IsPrint` (letters, marks, numbers,
    /// punctuation, symbols and the ASCII space), plus tab and line ends, which its parser keeps as separators.
    static func survivesParsing(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case " ", "\t", "\n", "\r": return true
        default: break
        }
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
             .nonspacingMark, .spacingMark, .enclosingMark,
             .decimalNumber, .letterNumber, .otherNumber,
             .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation, .initialPunctuation,
             .finalPunctuation, .otherPunctuation,
             .mathSymbol, .currencySymbol, .modifierSymbol, .otherSymbol:
            return true
        default:
            return false
        }
    }
}
