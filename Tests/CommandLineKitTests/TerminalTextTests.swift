import CommandLineKit
import Testing

@Test(arguments: [
    ("plain text, ünïcödé and emoji 🙂", "plain text, ünïcödé and emoji 🙂"),
    ("\u{1B}[2J", #"\x1b[2J"#),
    ("a\tb\rc\nd\u{7F}", #"a\tb\rc\nd\x7f"#),
    ("\u{0}\u{1F}", #"\x00\x1f"#),
    ("csi \u{9B}1m and nel \u{85}", #"csi \u{9b}1m and nel \u{85}"#),
    ("\u{202A}\u{202B}\u{202C}\u{202D}\u{202E}\u{2066}\u{2067}\u{2068}\u{2069}",
     #"\u{202a}\u{202b}\u{202c}\u{202d}\u{202e}\u{2066}\u{2067}\u{2068}\u{2069}"#),
    ("\u{200E} left-to-right mark is not an override", "\u{200E} left-to-right mark is not an override"),
])
func controlCharactersAndBidiOverridesBecomeVisibleEscapes(input: String, expected: String) {
    #expect(TerminalText.escaped(input) == expected)
}

@Test func messagesOfSeveralLinesKeepTheirNewlinesOnly() {
    #expect(TerminalText.escaped("line one\nline \u{1B}two", keepingNewlines: true) == "line one\nline \\x1btwo")
}

@Test func tableCellsAreEscapedSoEveryRowStaysOneLine() {
    var table = Table("NAME", "NOTE")
    table.append(["a\nb", "\u{1B}]0;title\u{07}"])
    let lines = table.render().split(separator: "\n")
    #expect(lines.count == 2)
    #expect(lines[1] == #"a\nb  \x1b]0;title\x07"#)
}
