/// The phrases a lineage's voice keeps coming back to, learned from its training completions.
///
/// The rule, deterministic and independent of input order:
/// 1. Each completion is read as lowercased words in clauses (`ReplyWords`); its candidate phrases are the
///    word n-grams of 2 to 4 words inside one clause, each counted once per completion.
/// 2. A candidate is a recurring phrase when at least `minCompletions` distinct completions hold it (by
///    default `defaultMinimum(completions:)`: one completion in ten, and never fewer than 2), and at least one
///    of its words is not a stop word ("of the", "as she" say nothing about a voice).
/// 3. A phrase inside a longer recurring phrase held by exactly the same completions is the longer phrase's
///    fragment, not a phrase of its own ("steady as" beside "steady as she goes"), and is dropped.
///
/// Phrases are user text: they live in this value while a command runs and are never stored or logged;
/// callers print them only when the user asks for text.
public struct RecurringPhrases: Sendable, Equatable {
    public struct Phrase: Sendable, Equatable {
        public let words: [String]
        /// How many distinct training completions hold it.
        public let completions: Int
        public var text: String { words.joined(separator: " ") }
    }

    public static let wordRange = 2...4

    /// How many completions were read.
    public let completions: Int
    /// How many distinct completions a phrase needed.
    public let minCompletions: Int
    /// Most widely held first; then longer first; then in alphabetical order.
    public let phrases: [Phrase]
    private let lookup: Set<[String]>

    /// One completion in ten, rounded up, and at least 2: a phrase must recur to say anything about a voice.
    public static func defaultMinimum(completions: Int) -> Int {
        max(2, (completions + 9) / 10)
    }

    public init(learningFrom texts: [String], minCompletions: Int? = nil) {
        let minimum = minCompletions ?? Self.defaultMinimum(completions: texts.count)
        precondition(minimum >= 1, "a phrase must be held by at least one completion")
        var held: [[String]: Int] = [:]
        for text in texts {
            for gram in Self.grams(ReplyWords.clauses(text)) { held[gram, default: 0] += 1 }
        }
        let candidates = held.filter { gram, count in
            count >= minimum && !gram.allSatisfy(Self.stopWords.contains)
        }
        let kept = candidates.filter { gram, count in
            !candidates.contains { longer, longerCount in
                longer.count > gram.count && longerCount == count && Self.contains(longer, gram)
            }
        }
        phrases = kept.map { Phrase(words: $0.key, completions: $0.value) }.sorted { a, b in
            if a.completions != b.completions { return a.completions > b.completions }
            if a.words.count != b.words.count { return a.words.count > b.words.count }
            return a.text < b.text
        }
        lookup = Set(phrases.map(\.words))
        completions = texts.count
        self.minCompletions = minimum
    }

    /// The phrases `text` holds (read by the same rule: within one clause), in `phrases` order.
    public func carried(by text: String) -> [Phrase] {
        let grams = Self.grams(ReplyWords.clauses(text))
        return phrases.filter { grams.contains($0.words) }
    }

    /// Whether `text` holds at least one recurring phrase.
    public func isCarried(by text: String) -> Bool {
        !lookup.isDisjoint(with: Self.grams(ReplyWords.clauses(text)))
    }

    /// The distinct n-grams (n in `wordRange`) inside each clause.
    static func grams(_ clauses: [[String]]) -> Set<[String]> {
        var grams = Set<[String]>()
        for clause in clauses {
            for n in wordRange where n <= clause.count {
                for start in 0...(clause.count - n) { grams.insert(Array(clause[start..<(start + n)])) }
            }
        }
        return grams
    }

    static func contains(_ longer: [String], _ shorter: [String]) -> Bool {
        (0...(longer.count - shorter.count)).contains { start in
            Array(longer[start..<(start + shorter.count)]) == shorter
        }
    }

    /// English function words: articles, pronouns, prepositions, conjunctions, auxiliaries and a few fillers.
    /// A phrase of other languages' function words is kept (it is not in this list); the rule says so.
    public static let stopWords: Set<String> = [
        "a", "an", "the", "and", "or", "but", "nor", "so", "yet", "if", "then", "than", "that", "this", "these",
        "those", "there", "here", "of", "to", "in", "on", "at", "by", "for", "with", "from", "into", "onto", "about",
        "as", "up", "down", "out", "off", "over", "under", "after", "before", "while", "until", "per", "via",
        "i", "me", "my", "mine", "we", "us", "our", "ours", "you", "your", "yours", "he", "him", "his", "she", "her",
        "hers", "it", "its", "they", "them", "their", "theirs", "one", "ones",
        "is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did", "done", "have", "has", "had",
        "will", "would", "shall", "should", "can", "could", "may", "might", "must",
        "i'm", "it's", "don't", "can't", "you're", "we're", "that's", "there's", "i've", "i'll", "isn't", "won't",
        "not", "no", "yes", "all", "any", "some", "each", "every", "just", "also", "very", "too", "more", "most",
        "what", "which", "who", "whom", "whose", "when", "where", "why", "how",
    ]
}
