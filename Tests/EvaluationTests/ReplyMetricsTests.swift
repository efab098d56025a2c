import Testing
@testable import Evaluation

private let none = RecurringPhrases(learningFrom: [], minCompletions: 1)

private func reply(_ text: String, cut: Bool = false) -> Reply { Reply(text: text, endedAtLimit: cut) }

@Test func distinctTwoIsDistinctBigramsOverAllBigramsOfTheReplies() {
    // "a b c" → ab, bc; "a b a b" → ab, ba, ab: 5 bigrams, 3 distinct (ab, bc, ba).
    let metrics = ReplyMetrics([reply("A b, c."), reply("a b a b")], phrases: none)
    #expect(metrics.bigrams == 5 && metrics.distinctBigrams == 3)
    #expect(metrics.distinct2 == 0.6)
}

@Test func distinctTwoCountsNoBigramAcrossTwoReplies() {
    let metrics = ReplyMetrics([reply("one"), reply("two")], phrases: none)
    #expect(metrics.bigrams == 0 && metrics.distinct2 == nil)
    #expect(ReplyMetrics([], phrases: none).phraseShare == nil)
}

@Test func aRunRepeatedThreeTimesBackToBackIsALoop() {
    #expect(ReplyMetrics.hasRepetitionLoop(reply("Orders: go. Orders: go. Orders: go.")))
    #expect(ReplyMetrics.hasRepetitionLoop(reply("well no no no, said she")))
    #expect(ReplyMetrics.hasRepetitionLoop(reply("x " + String(repeating: "the ship sails on at dawn ", count: 3))))
}

@Test func aRunRepeatedTwiceOrApartIsNoLoop() {
    #expect(!ReplyMetrics.hasRepetitionLoop(reply("Orders: go. Orders: go. Then rest.")))
    #expect(!ReplyMetrics.hasRepetitionLoop(reply("go home, then go out, then go to sleep")))
    #expect(!ReplyMetrics.hasRepetitionLoop(reply("LOG ENTRY. Subject: tea. Orders: boil water. Steady as she goes.")))
}

@Test func aRunLongerThanTheLimitIsNoLoopUntilItIsCut() {
    let run = (1...17).map { "w\($0)" }.joined(separator: " ") + ". "
    let text = String(repeating: run, count: 3)
    #expect(!ReplyMetrics.hasRepetitionLoop(reply(text)))
    #expect(ReplyMetrics.hasRepetitionLoop(reply(text + "w1 w2 w3 w4 w5 w6 w", cut: true)))
}

@Test func aReplyCutWhileRepeatingItsEarlierWordsIsALoop() {
    let text = "LOG ENTRY. Subject: tea. Conditions: cold galley. Orders: boil water. LOG ENTRY. Subject: tea. Conditions: cold galley. Or"
    #expect(ReplyMetrics.hasRepetitionLoop(reply(text, cut: true)))
    #expect(!ReplyMetrics.hasRepetitionLoop(reply(text, cut: false)))
    let fresh = "LOG ENTRY. Subject: tea. Conditions: cold galley. Orders: boil water. Next the kettle must be scrubbed tomor"
    #expect(!ReplyMetrics.hasRepetitionLoop(reply(fresh, cut: true)))
}

@Test func metricsCountRepliesWithAPhraseLoopsAndCuts() {
    let phrases = RecurringPhrases(learningFrom: ["Log entry. Steady.", "log entry, calm", "no entry"], minCompletions: 2)
    let metrics = ReplyMetrics([reply("LOG ENTRY. All calm."), reply("Hello there, sailor", cut: true),
                                reply("ho ho ho ho")], phrases: phrases)
    #expect(metrics.replies == 3 && metrics.withPhrase == 1)
    #expect(metrics.phraseShare == 1.0 / 3)
    #expect(metrics.loops == 1 && metrics.endedAtLimit == 1)
}
