import AdaptCore
import Foundation
import ReplayBuffer
import Testing
import TestSupport

@Test func heldOutExamplesStayHeldOutAcrossImportsNightsAndPolicyChanges() throws {
    let fixture = try BufferFixture()
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

@Test func splitFollowsTheHashOfTheIdAtTheConfiguredFraction() throws {
    let fixture = try BufferFixture()
    try fixture.store.setPolicy(lineage: "mail") { $0.minHeldOut = 0 }
    try fixture.importLines(400)
    for example in try fixture.store.examples() {
        #expect(example.split == HeldOutSplit.initialSplit(id: example.id, fraction: 0.2))
    }
    let held = try fixture.store.examples(split: .heldOut).count
    #expect((50...110).contains(held), "about 20 % of 400")
}

@Test func smallLineagesGetAMinimumHeldOutFromUnusedExamples() throws {
    let fixture = try BufferFixture()
    try fixture.store.setPolicy(lineage: "mail") { $0.heldOutFraction = 0 }
    try fixture.importLines(6)
    #expect(try fixture.store.examples(split: .heldOut).count == 3, "min(8, 6 / 2)")
    // Examples that were trained on never move to held-out.
    _ = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 1, night: "n1")
    let used = Set(try fixture.store.examples(split: .train).filter { $0.uses > 0 }.map(\.id))
    #expect(used.count == 3)
    try fixture.importLines(4, from: 6)
    let heldOut = try fixture.store.examples(split: .heldOut)
    #expect(heldOut.count == 5)
    #expect(Set(heldOut.map(\.id)).isDisjoint(with: used))
}

@Test func aFileImportedAsHeldOutIsNeverTrainedOnAndEarlierSplitsStay() throws {
    let fixture = try BufferFixture()
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
