import AdaptCore
import Foundation
import ReplayBuffer
import Testing
import TestSupport

@Test(arguments: Backend.allCases)
func heldOutExamplesStayHeldOutAcrossImportsNightsAndPolicyChanges(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    var heldOut: Set<String> = []
    for round in 0..<4 {
        try fixture.importLines(25, from: round * 25)
        let now = Set(try fixture.store.examples(split: .heldOut).map(\.id))
        #expect(now.isSuperset(of: heldOut), "the held-out set only grows")
        heldOut = now
        let report = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 3, night: "night-\(round)")
        let trained = Set(try DatasetSnapshot.load(report.trainSnapshot, from: fixture.blobs).map(\.id))
        let evaluated = Set(try DatasetSnapshot.load(report.heldOutSnapshot, from: fixture.blobs).map(\.id))
        #expect(trained.isDisjoint(with: heldOut), "never trained on")
        #expect(evaluated == heldOut)
        fixture.clock.advance(milliseconds: day)
    }
    // Lowering the fraction moves nothing back; raising it applies to new examples only.
    try fixture.store.setPolicy(lineage: "mail") { $0.heldOutFraction = 0 }
    #expect(Set(try fixture.store.examples(split: .heldOut).map(\.id)) == heldOut)
    try fixture.importLines(25, from: 100)
    #expect(Set(try fixture.store.examples(split: .heldOut).map(\.id)) == heldOut)
    try fixture.store.setPolicy(lineage: "mail") { $0.heldOutFraction = 0.5 }
    #expect(Set(try fixture.store.examples(split: .heldOut).map(\.id)) == heldOut)
}

@Test(arguments: Backend.allCases)
func splitFollowsTheHashOfTheIdAtTheConfiguredFraction(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    try fixture.store.setPolicy(lineage: "mail") { $0.minHeldOut = 0 }
    try fixture.importLines(400)
    for example in try fixture.store.examples() {
        #expect(example.split == HeldOutSplit.initialSplit(id: example.id, fraction: 0.2))
    }
    let held = try fixture.store.examples(split: .heldOut).count
    #expect((50...110).contains(held), "about 20 % of 400")
}

@Test(arguments: Backend.allCases)
func aSmallLineageHoldsOutEveryNewExampleUntilTheGateCanJudgeIt(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    let six = try fixture.importLines(6)
    #expect(try fixture.store.examples(split: .heldOut).count == 6, "below the minimum of 10 every example is held out")
    #expect(six.gateReadiness == GateReadiness(heldOut: 6, minPairs: 10))
    #expect(six.gateReadiness?.moreExamplesNeeded == 4)
    #expect(six.gateReadiness?.sentence == "6 held-out pairs; the gate needs 10: import 4 more")
    // Importing exactly the number asked for reaches the minimum.
    let four = try fixture.importLines(4, from: 6)
    #expect(four.heldOut == 4 && four.gateReadiness?.canBeJudged == true)
    #expect(four.gateReadiness?.sentence == "10 held-out pairs; the gate needs 10")
    // Past the minimum the configured fraction applies, by the hash of each new id.
    let before = Set(try fixture.store.examples(split: .heldOut).map(\.id))
    try fixture.importLines(60, from: 10)
    let after = try fixture.store.examples()
    for example in after where !before.contains(example.id) {
        #expect(example.split == HeldOutSplit.initialSplit(id: example.id, fraction: 0.2))
    }
    #expect(Set(after.filter { $0.split == .heldOut }.map(\.id)).isSuperset(of: before))
}

@Test(arguments: Backend.allCases)
func fortyExamplesHoldOutTheGatesMinimumLowestKeysFirst(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    let report = try fixture.importLines(40)
    let all = try fixture.store.examples()
    let byKey = all.sorted { HeldOutSplit.key(id: $0.id) < HeldOutSplit.key(id: $1.id) }
    // The same set as deciding each example in key order: the 10 lowest keys, then the hash at 20 %.
    let expected = Set(byKey.prefix(10).map(\.id)).union(all.filter { HeldOutSplit.position(id: $0.id) < 0.2 }.map(\.id))
    #expect(Set(all.filter { $0.split == .heldOut }.map(\.id)) == expected)
    #expect(report.heldOut == expected.count && expected.count >= 10)
    #expect(report.gateReadiness?.canBeJudged == true)
}

@Test(arguments: Backend.allCases)
func theGatesMinimumRaisesTheLineagesAndStatsSayWhatIsMissing(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    try fixture.store.setPolicy(lineage: "mail") { $0.minHeldOut = 3 }
    var options = ImportOptions()
    options.gateMinimum = 12
    let report = try fixture.store.importJSONL(BufferFixture.lines(9), lineage: "mail", options: options)
    #expect(report.heldOut == 9 && report.gateReadiness == GateReadiness(heldOut: 9, minPairs: 12))
    let stats = try #require(try fixture.store.stats(lineage: "mail", gateMinimum: 12).first)
    #expect(stats.gateReadiness?.moreExamplesNeeded == 3)
    #expect(stats.gateReadiness?.sentence == "9 held-out pairs; the gate needs 12: import 3 more")
    // Without a gate's minimum the lineage's own (3) is what is needed.
    #expect(try fixture.store.stats(lineage: "mail").first?.gateReadiness?.canBeJudged == true)
}

@Test(arguments: Backend.allCases)
func theOldRuleStaysForReplayAndUsedExamplesNeverMove(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    try fixture.store.setPolicy(lineage: "mail") { $0.heldOutFraction = 0; $0.minHeldOut = 0 }
    try fixture.importLines(6)
    // A lineage stored before the fill-first rule: a floor of 8, nothing held out yet.
    try fixture.store.database.run("UPDATE replay_lineages SET min_held_out = 8")
    _ = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 1, night: "n1",
                           policy: SamplePolicy(heldOutRule: .halfCapped, gateMinimum: 10))
    #expect(try fixture.store.examples(split: .heldOut).count == 3, "the old rule: min(8, 6 / 2), the gate's 10 ignored")
    let used = Set(try fixture.store.examples(split: .train).filter { $0.uses > 0 }.map(\.id))
    #expect(used.count == 3)
    // The new rule tops up to the gate's minimum with the new examples, never with used ones.
    let report = try fixture.importLines(4, from: 6)
    #expect(report.heldOut == 4)
    _ = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 1, night: "n2",
                           policy: SamplePolicy(gateMinimum: 10))
    let heldOut = try fixture.store.examples(split: .heldOut)
    #expect(heldOut.count == 7, "3 + the 4 new; the 3 used stay in train")
    #expect(Set(heldOut.map(\.id)).isDisjoint(with: used))
}

@Test(arguments: Backend.allCases)
func aFileImportedAsHeldOutIsNeverTrainedOnAndEarlierSplitsStay(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    try fixture.importLines(30)
    let before = try fixture.store.examples()
    var options = ImportOptions()
    options.heldOut = true
    // Ten new lines and ten already stored (their split must not move).
    let report = try fixture.store.importJSONL(BufferFixture.lines(20, from: 20), lineage: "mail", options: options)
    #expect(report.imported == 10 && report.duplicates == 10)
    let after = try fixture.store.examples()
    for example in before {
        #expect(after.first { $0.id == example.id }?.split == example.split)
    }
    let new = after.filter { item in !before.contains { $0.id == item.id } }
    #expect(new.count == 10 && new.allSatisfy { $0.split == .heldOut })
    let sample = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 1, night: "n")
    let trained = Set(try DatasetSnapshot.load(sample.trainSnapshot, from: fixture.blobs).map(\.id))
    #expect(trained.isDisjoint(with: new.map(\.id)))
}


@Test func theDefaultHeldOutMinimumIsTheDefaultPipelinesMinPairs() throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let data = try Data(contentsOf: root.appendingPathComponent("pipelines/nightly.json"))
    let pipeline = try JSON.decode(JSONValue.self, from: data, context: "nightly.json")
    #expect(pipeline["eval"]?["min_pairs"]?.intValue == LineagePolicy.defaults.minHeldOut)
}
