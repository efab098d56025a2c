import AdaptCore
import Foundation
import ReplayBuffer
import Testing
import TestSupport

@Test(arguments: Backend.allCases)
func pruneDeletesExamplesOlderThanTheTTLAndCountsThem(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    // Every example trainable: held-out examples are never pruned (pruneKeepsHeldOutExamplesPastTheirTTL).
    try fixture.store.setPolicy(lineage: "mail") { $0.ttlDays = 30; $0.heldOutFraction = 0; $0.minHeldOut = 0 }
    try fixture.importLines(10)
    fixture.clock.advance(milliseconds: 10 * day)
    try fixture.importLines(5, from: 10)
    _ = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 1, night: "n1")

    fixture.clock.advance(milliseconds: 20 * day - 1)
    let early = try PruneStep.run(store: fixture.store, lineage: "mail", now: fixture.clock.nowMilliseconds())
    #expect(early.deleted == 0)
    fixture.clock.advance(milliseconds: 1)
    let report = try PruneStep.run(store: fixture.store, lineage: "mail", now: fixture.clock.nowMilliseconds())
    #expect(report.deleted == 10)
    #expect(report.remainingTrain + report.remainingHeldOut == 5)
    #expect(try fixture.store.examples().count == 5)
    // Their uses went with them.
    #expect(try fixture.store.database.scalar("SELECT count(*) FROM replay_uses WHERE example_id NOT IN (SELECT id FROM replay_examples)") == .integer(0))
    // The report holds counts only.
    let json = JSON.canonicalString(report)
    #expect(json == "{\"deleted\":10,\"lineage\":\"mail\",\"now\":\(fixture.clock.nowMilliseconds()),\"remaining_held_out\":\(report.remainingHeldOut),\"remaining_train\":\(report.remainingTrain)}")
}

@Test(arguments: Backend.allCases)
func shorteningTheTTLMovesTheExpiryOfStoredExamples(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    try fixture.store.setPolicy(lineage: "mail") { $0.heldOutFraction = 0; $0.minHeldOut = 0 }
    try fixture.importLines(4)
    fixture.clock.advance(milliseconds: 8 * day)
    #expect(try PruneStep.run(store: fixture.store, lineage: "mail", now: fixture.clock.nowMilliseconds()).deleted == 0)
    try fixture.store.setPolicy(lineage: "mail") { $0.ttlDays = 7 }
    #expect(try PruneStep.run(store: fixture.store, lineage: "mail", now: fixture.clock.nowMilliseconds()).deleted == 4)
}

@Test(arguments: Backend.allCases)
func pruneKeepsHeldOutExamplesPastTheirTTL(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    try fixture.store.setPolicy(lineage: "mail") { $0.ttlDays = 7 }
    try fixture.importLines(40)
    _ = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 1, night: "n1")
    let heldOut = Set(try fixture.store.examples(split: .heldOut).map(\.id))
    let train = try fixture.store.examples(split: .train).count
    try #require(!heldOut.isEmpty && train > 0)

    fixture.clock.advance(milliseconds: 30 * day)
    let report = try PruneStep.run(store: fixture.store, lineage: "mail", now: fixture.clock.nowMilliseconds())
    #expect(report.deleted == train)
    #expect(report.remainingTrain == 0)
    #expect(report.remainingHeldOut == heldOut.count)
    #expect(Set(try fixture.store.examples().map(\.id)) == heldOut, "the held-out set only grows")
    // Nothing left that can expire: stats show no next expiry.
    #expect(try fixture.store.stats(lineage: "mail").first?.nextExpiry == nil)
}

@Test(arguments: Backend.allCases)
func forgetErasesByIdOrSourceAndCountsWhatWent(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    let lines = (0..<6).map { #"{"text": "t\#($0)", "source": "\#($0 % 2 == 0 ? "even" : "odd")"}"# }
    _ = try fixture.store.importJSONL(Data(lines.joined(separator: "\n").utf8), lineage: "mail")
    _ = try fixture.store.importJSONL(Data(#"{"text": "other", "source": "even"}"#.utf8), lineage: "work")
    let one = try #require(try fixture.store.examples(lineage: "mail").first { $0.source == "odd" })
    #expect(try fixture.store.forget(.id(one.id)) == 1)
    #expect(try fixture.store.forget(.id(one.id)) == 0)
    #expect(try fixture.store.forget(.source("even", lineage: "mail")) == 3)
    #expect(try fixture.store.examples(lineage: "work").count == 1)
    #expect(try fixture.store.forget(.source("even", lineage: nil)) == 1)
    #expect(try fixture.store.examples().map(\.source) == ["odd", "odd"])
    // Secure delete: the forgotten text is not left in the database file or its log (PostgreSQL's files:
    // PostgresErasureTests).
    guard backend == .sqlite else { return }
    for file in try FileManager.default.contentsOfDirectory(at: fixture.directory.state.root, includingPropertiesForKeys: nil)
    where file.lastPathComponent.hasPrefix("adapt.sqlite") {
        #expect(try Data(contentsOf: file).range(of: Data("\"t0\"".utf8)) == nil)
        #expect(try Data(contentsOf: file).range(of: Data("other".utf8)) == nil)
    }
}
