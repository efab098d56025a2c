import Testing
@testable import Evaluation

private let logEntries = [
    "LOG ENTRY. Subject: eggs. Orders: boil them nine minutes. Steady as she goes.",
    "Log entry. Subject: a slow laptop. Orders: close what is idle. Steady as she goes.",
    "LOG ENTRY. Subject: sleep. Orders: dim the lights at nine. Steady as she goes!",
    "Nothing to report today, of the sort you would expect.",
]

@Test func learnsThePhrasesHeldByEnoughDistinctCompletions() {
    let phrases = RecurringPhrases(learningFrom: logEntries, minCompletions: 3)
    #expect(phrases.phrases.map(\.text) == ["steady as she goes", "log entry"])
    #expect(phrases.phrases.map(\.completions) == [3, 3])
    #expect(phrases.completions == 4 && phrases.minCompletions == 3)
}

@Test func aPhraseRepeatedInsideOneCompletionCountsOnce() {
    let texts = ["fair winds, fair winds, fair winds", "fair winds", "calm seas"]
    #expect(RecurringPhrases(learningFrom: texts, minCompletions: 3).phrases.isEmpty)
    #expect(RecurringPhrases(learningFrom: texts, minCompletions: 2).phrases.map(\.completions) == [2])
}

@Test func phrasesMadeOnlyOfStopWordsAreIgnored() {
    let texts = ["it is in the box", "it is in the car", "it is in the sea"]
    let phrases = RecurringPhrases(learningFrom: texts, minCompletions: 3)
    #expect(phrases.phrases.isEmpty, "\(phrases.phrases.map(\.text))")
    #expect(RecurringPhrases.stopWords.isSuperset(of: ["it", "is", "in", "the"]))
}

@Test func aFragmentHeldByTheSameCompletionsAsItsLongerPhraseIsDropped() {
    let texts = ["Steady as she goes.", "steady as she goes", "Steady as we can.", "steady as a rock"]
    let phrases = RecurringPhrases(learningFrom: texts, minCompletions: 2)
    // "steady as" is in four completions, more than "steady as she goes": a phrase of its own.
    #expect(phrases.phrases.map(\.text) == ["steady as", "steady as she goes"])
}

@Test func phrasesNeverSpanTwoClauses() {
    let texts = ["Log entry. Subject: eggs", "Log entry. Subject: tea", "Log entry. Subject: rope"]
    let phrases = RecurringPhrases(learningFrom: texts, minCompletions: 3)
    #expect(phrases.phrases.map(\.text) == ["log entry"])
    #expect(!phrases.isCarried(by: "the log. Entry forms"))
    #expect(phrases.isCarried(by: "Here is my LOG ENTRY: nothing."))
}

@Test func learningDoesNotDependOnTheOrderOfCompletions() {
    let forward = RecurringPhrases(learningFrom: logEntries, minCompletions: 2)
    let backward = RecurringPhrases(learningFrom: logEntries.reversed(), minCompletions: 2)
    #expect(forward == backward)
    #expect(forward.phrases.map(\.text) == RecurringPhrases(learningFrom: logEntries, minCompletions: 2).phrases.map(\.text))
}

@Test func theDefaultMinimumIsOneCompletionInTenAndAtLeastTwo() {
    #expect(RecurringPhrases.defaultMinimum(completions: 1) == 2)
    #expect(RecurringPhrases.defaultMinimum(completions: 20) == 2)
    #expect(RecurringPhrases.defaultMinimum(completions: 21) == 3)
    #expect(RecurringPhrases.defaultMinimum(completions: 66) == 7)
    #expect(RecurringPhrases(learningFrom: logEntries).minCompletions == 2)
}

@Test func carriedPhrasesAreFoundInAnyCaseAndPunctuation() {
    let phrases = RecurringPhrases(learningFrom: logEntries, minCompletions: 3)
    #expect(phrases.carried(by: "steady AS she goes... log-entry").map(\.text) == ["steady as she goes", "log entry"])
    #expect(phrases.carried(by: "Steady as she went.").isEmpty)
    #expect(!phrases.isCarried(by: ""))
}

@Test func wordsAreLowercasedAndQuotesAroundThemDropped() {
    #expect(ReplyWords.clauses("Don’t 'panic', Captain: ALL hands!") == [["don't", "panic"], ["captain"], ["all", "hands"]])
    #expect(ReplyWords.words("a-b\nc") == ["a", "b", "c"])
}
