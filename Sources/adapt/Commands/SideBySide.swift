/// Two texts in two columns, word-wrapped, for `adapt generate --compare`.
enum SideBySide {
    static func render(left: (title: String, text: String), right: (title: String, text: String), width: Int) -> String {
        let column = max(10, (width - 3) / 2)
        let a = [clip(left.title, column), String(repeating: "─", count: column)] + wrap(left.text, column)
        let b = [clip(right.title, column), String(repeating: "─", count: column)] + wrap(right.text, column)
        return (0..<max(a.count, b.count)).map { i in
            let l = i < a.count ? a[i] : "", r = i < b.count ? b[i] : ""
            return pad(l, column) + " │ " + r
        }.joined(separator: "\n")
    }

    /// Lines of at most `width` characters, broken at blanks where possible; the text's own newlines kept.
    static func wrap(_ text: String, _ width: Int) -> [String] {
        var lines: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = ""
            for word in paragraph.split(separator: " ", omittingEmptySubsequences: false) {
                var word = String(word)
                while word.count > width {  // a word longer than the column is cut
                    if !line.isEmpty { lines.append(line); line = "" }
                    lines.append(String(word.prefix(width)))
                    word = String(word.dropFirst(width))
                }
                if line.isEmpty { line = word } else if line.count + 1 + word.count <= width { line += " " + word } else {
                    lines.append(line)
                    line = word
                }
            }
            lines.append(line)
        }
        return lines
    }

    static func clip(_ text: String, _ width: Int) -> String { text.count <= width ? text : String(text.prefix(width)) }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}
