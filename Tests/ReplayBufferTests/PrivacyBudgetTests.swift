import AdaptCore
import Foundation
import ReplayBuffer
import Testing
import TestSupport

@Test(arguments: Backend.allCases)
func spentExamplesAreNeverSampledAgain(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    try fixture.store.setPolicy(lineage: "mail") { $0.maxUsesPerExample = 2; $0.minHeldOut = 0; $0.heldOutFraction = 0 }
    try fixture.importLines(20)
    var taken: [String: Int] = [:]
    var nights = 0
    while true {
        let report = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 5, night: "night-\(nights)",
                                        policy: SamplePolicy(maxExamples: 7))
        nights += 1
        if report.trainExamples == 0 { #expect(report.spent == 20); break }
        for example in try DatasetSnapshot.load(report.trainSnapshot, from: fixture.blobs) { taken[example.id, default: 0] += 1 }
        #expect(nights < 20)
    }
    #expect(taken.count == 20)
    #expect(taken.values.allSatisfy { $0 == 2 })
    #expect(try fixture.store.examples().allSatisfy { $0.uses == 2 })
    #expect(try fixture.store.stats(lineage: "mail").first?.spent == 20)
}

@Test(arguments: Backend.allCases)
func aNightNeverTrainsOnMoreTokensThanItsBudget(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    try fixture.importLines(50)
    try fixture.store.setPolicy(lineage: "mail") { $0.maxTokensPerNight = 100 }
    let perExample = try #require(try fixture.store.examples().first?.tokenCount)
    let report = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 9, night: "n")
    #expect(report.trainTokens <= 100)
    #expect(report.trainExamples == 100 / perExample)
    #expect(report.passedOverForTokens == report.eligible - report.trainExamples)
    // The pipeline may tighten the budget, never loosen it.
    let tighter = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 9, night: "n",
                                     policy: SamplePolicy(maxTokens: 50))
    #expect(tighter.trainTokens <= 50 && tighter.tokenBudget == 50)
    let looser = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 9, night: "n",
                                    policy: SamplePolicy(maxTokens: 10_000))
    #expect(looser.tokenBudget == 100 && looser == report)
}

@Test(arguments: Backend.allCases)
func exactTokenCountsReplaceEstimates(_ backend: Backend) throws {
    struct Words: TokenCounter {
        var isExact: Bool { true }
        func count(_ text: String) -> Int { text.split(separator: " ").count }
    }
    let fixture = try BufferFixture(backend)
    try fixture.importLines(3, words: 6)
    #expect(try fixture.store.recountTokens(lineage: "mail", counter: Words()) == 3)
    for example in try fixture.store.examples() {
        #expect(example.tokenCountExact && example.tokenCount == 2 + 6)
    }
}

@Test(arguments: Backend.allCases)
func policyValuesOutOfRangeAreRefusedAndNothingChanges(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    try fixture.importLines(3)
    let before = try fixture.store.policy(lineage: "mail")
    #expect(throws: ReplayError.self) { try fixture.store.setPolicy(lineage: "mail") { $0.maxUsesPerExample = 0 } }
    #expect(throws: ReplayError.self) { try fixture.store.setPolicy(lineage: "mail") { $0.heldOutFraction = 0.9 } }
    #expect(throws: ReplayError.self) { try fixture.store.setPolicy(lineage: "mail") { $0.ttlDays = 0 } }
    #expect(try fixture.store.policy(lineage: "mail") == before)
    #expect(before == LineagePolicy.defaults)
}

@Test(arguments: Backend.allCases)
func aPipelineCanOnlyTightenHowOftenAnExampleIsTrainedOn(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    try fixture.store.setPolicy(lineage: "mail") { $0.minHeldOut = 0; $0.heldOutFraction = 0; $0.maxUsesPerExample = 5 }
    try fixture.importLines(6)
    let once = SamplePolicy(maxUses: 1)
    let first = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 1, night: "a", policy: once)
    let second = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 1, night: "b", policy: once)
    #expect(first.trainExamples == 6)
    #expect(second.trainExamples == 0 && second.spent == 6)
    // Asking for more uses than the lineage allows does not loosen its budget.
    let generous = SamplePolicy(maxUses: 100)
    for night in ["c", "d", "e", "f"] {
        _ = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 1, night: night, policy: generous)
    }
    let sixth = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 1, night: "g", policy: generous)
    #expect(sixth.trainExamples == 0)
}

@Test(arguments: Backend.allCases)
func examplesNoNightTrainedOnComeBeforeRehearsalWhenTheBudgetIsShort(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    try fixture.store.setPolicy(lineage: "mail") { $0.minHeldOut = 0; $0.heldOutFraction = 0; $0.maxUsesPerExample = 3 }
    try fixture.importLines(12)
    let first = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 3, night: "a",
                                   policy: SamplePolicy(maxExamples: 6))
    let used = Set(try DatasetSnapshot.load(first.trainSnapshot, from: fixture.blobs).map(\.id))
    #expect(used.count == 6)

    let newFirst = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 3, night: "b",
                                      policy: SamplePolicy(maxExamples: 6, order: .newFirst))
    let taken = try DatasetSnapshot.load(newFirst.trainSnapshot, from: fixture.blobs).map(\.id)
    #expect(taken.count == 6 && used.isDisjoint(with: taken))
    // With room for more, the used examples join as rehearsal after every new one.
    let roomy = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 3, night: "b",
                                   policy: SamplePolicy(maxExamples: 9, order: .newFirst))
    let rehearsed = try DatasetSnapshot.load(roomy.trainSnapshot, from: fixture.blobs).map(\.id)
    #expect(Set(rehearsed.prefix(6)) == Set(taken) && used.isSuperset(of: rehearsed.suffix(3)))
    // One weighted draw over all twelve (runs planned before the order) takes used ones too at this seed.
    let weighted = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 3, night: "b",
                                      policy: SamplePolicy(maxExamples: 6, order: .weighted))
    #expect(!used.isDisjoint(with: try DatasetSnapshot.load(weighted.trainSnapshot, from: fixture.blobs).map(\.id)))
}
