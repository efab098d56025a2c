/// One generated reply as the voice check reads it.
public struct Reply: Sendable, Equatable {
    public let text: String
    /// Generation stopped because it reached its token limit, not because the model ended its turn.
    public let endedAtLimit: Bool

    public init(text: String, endedAtLimit: Bool) {
        self.text = text
        self.endedAtLimit = endedAtLimit
    }
}

/// The voice check's figures for one model over a set of replies: how many carry a recurring phrase, how
/// varied their wording is (distinct-2), how many fell into a repetition loop.
public struct ReplyMetrics: Sendable, Equatable {
    public let replies: Int
    public let withPhrase: Int
    /// Distinct word bigrams over all replies, and all word bigrams (`distinct2` is their ratio).
    public let distinctBigrams: Int
    public let bigrams: Int
    public let loops: Int
    public let endedAtLimit: Int

    /// Share of replies carrying at least one recurring phrase; nil when there are no replies.
    public var phraseShare: Double? { replies > 0 ? Double(withPhrase) / Double(replies) : nil }
    /// Li et al. (2016): distinct bigrams / total bigrams. Bigrams are counted inside each reply (none spans
    /// two replies), over its words with punctuation ignored; nil when the replies hold no bigram at all.
    public var distinct2: Double? { bigrams > 0 ? Double(distinctBigrams) / Double(bigrams) : nil }

    public init(_ replies: [Reply], phrases: RecurringPhrases) {
        var seen = Set<[String]>()
        var total = 0
        for reply in replies {
            let words = ReplyWords.words(reply.text)
            guard words.count >= 2 else { continue }
            for i in 0..<(words.count - 1) { seen.insert([words[i], words[i + 1]]) }
            total += words.count - 1
        }
        self.replies = replies.count
        withPhrase = replies.filter { phrases.isCarried(by: $0.text) }.count
        distinctBigrams = seen.count
        bigrams = total
        loops = replies.filter { Self.hasRepetitionLoop($0) }.count
        endedAtLimit = replies.filter(\.endedAtLimit).count
    }

    /// A run of words repeated this many times back to back is a loop…
    public static let loopRepeats = 3
    /// …when the run is at most this many words long.
    public static let loopMaxWords = 16
    /// A reply cut at its token limit whose last this-many words already appeared earlier was cut while
    /// repeating itself.
    public static let tailWords = 6

    /// Whether `reply` is stuck in a repetition loop. Over its words (punctuation ignored), either
    /// - some run of 1 to `loopMaxWords` words occurs `loopRepeats` or more times in immediate succession
    ///   ("orders: go. orders: go. orders: go."), or
    /// - it ended at its token limit and the `tailWords` words before its last word (which the limit may have
    ///   cut in the middle) also occur earlier in it: a repetition too long to repeat three times was cut off.
    public static func hasRepetitionLoop(_ reply: Reply) -> Bool {
        let words = ReplyWords.words(reply.text)
        if hasRepeatedRun(words) { return true }
        guard reply.endedAtLimit, words.count >= tailWords + 2 else { return false }
        let tailStart = words.count - 1 - tailWords
        let tail = Array(words[tailStart..<(words.count - 1)])
        return (0..<tailStart).contains { start in Array(words[start..<(start + tailWords)]) == tail }
    }

    static func hasRepeatedRun(_ words: [String]) -> Bool {
        for n in 1...loopMaxWords where n * loopRepeats <= words.count {
            for start in 0...(words.count - n * loopRepeats) {
                let run = words[start..<(start + n)]
                if (1..<loopRepeats).allSatisfy({ k in words[(start + k * n)..<(start + (k + 1) * n)].elementsEqual(run) }) {
                    return true
                }
            }
        }
        return false
    }
}
