/// How the voice check reads a text: lowercased words, grouped into clauses.
///
/// A word is a run of letters, digits and apostrophes (’ counts as '); anything else separates words. A
/// clause ends at sentence or clause punctuation (. , ; : ! ? … brackets, quotes, dashes) or a line break, so
/// "LOG ENTRY. Subject:" holds the phrase "log entry" but no phrase "entry subject". Phrases never cross a
/// clause boundary; distinct-2 and loop detection read the words of a whole reply.
public enum ReplyWords {
    /// The clauses of `text`, each a non-empty list of lowercased words.
    public static func clauses(_ text: String) -> [[String]] {
        var clauses: [[String]] = []
        var clause: [String] = []
        var word = ""
        func endWord() {
            // Apostrophes belong to a word only inside it ("don't"), not as quotes around it.
            let trimmed = word.drop(while: { $0 == "'" }).reversed().drop(while: { $0 == "'" }).reversed()
            if !trimmed.isEmpty { clause.append(String(trimmed)) }
            word = ""
        }
        func endClause() {
            endWord()
            if !clause.isEmpty { clauses.append(clause); clause = [] }
        }
        for character in text {
            if character == "'" || character == "’" {
                word.append("'")
            } else if character.isLetter || character.isNumber {
                word += character.lowercased()
            } else if clauseBreaks.contains(character) || character.isNewline {
                endClause()
            } else {
                endWord()
            }
        }
        endClause()
        return clauses
    }

    /// Every word of `text`, in order, clause boundaries ignored.
    public static func words(_ text: String) -> [String] {
        clauses(text).flatMap { $0 }
    }

    static let clauseBreaks: Set<Character> = [
        ".", ",", ";", ":", "!", "?", "…", "(", ")", "[", "]", "{", "}", "\"", "“", "”", "«", "»", "—", "–",
    ]
}
