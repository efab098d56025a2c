import AdaptCore
import Foundation
import JobQueue
import Testing
import TestSupport

/// With warm starts a version carries what its whole `trained_from` chain trained on (issue 42, item 6): erasing an
/// example retires the versions of the chain after the first that saw it, the export and the next night follow the
/// clean ancestor, and a night started from a version retired while it ran is refused at promote. TTL expiry lists
/// the same versions, and retires them when the pipeline says `prune.ttl_retires_adapters`. On the tiny model,
/// through the built executables.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ErasureFollowsWeightsChainTests {
    static let retiringPipeline = """
        {"seed": 7, "prune": {"ttl_retires_adapters": true},
         "train": {"steps": 16, "checkpoint_interval": 4, "batch_size": 2, "warmup_steps": 2, "max_length": 96,
                   "early_stopping": null, "learning_rate": 0.01},
         "device": {"min_available_memory_mb": 64}}
        """

    static func importNight(_ fixture: PipelineFixture, _ number: Int) async throws {
        let path = PipelineFixture.root.appendingPathComponent("pipelines/examples/logbook/nights/night-\(number).jsonl").path
        try fixture.expectSuccess(await fixture.adapt(["data", "import", path, "--lineage", "logbook", "--source", "night-\(number)"]))
    }

    /// Enqueues the logbook night `night` of the fixture's pipeline; returns its run id.
    static func enqueue(_ fixture: PipelineFixture, night: String) async throws -> String {
        try await QuarantineStepTests.enqueue(fixture, night: night)
    }

    /// `registry list --json` by version name.
    static func registry(_ fixture: PipelineFixture) async throws -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        for version in try await WarmStartNightTests.registry(fixture) {
            if let name = version["version"]?.stringValue { out[name] = version }
        }
        return out
    }

    /// An entry of `active_moves` for the logbook lineage.
    static func move(from: JSONValue, to: JSONValue) -> JSONValue {
        .object(["lineage": .string("logbook"), "from": from, "to": to])
    }

    /// The active version and its weights parents back to a version trained from zero, newest first.
    static func activeChain(_ fixture: PipelineFixture) async throws -> [String] {
        let versions = try await registry(fixture)
        var chain: [String] = []
        var next = versions.values.first { $0["active"] == .bool(true) }?["version"]?.stringValue
        while let name = next, !chain.contains(name) {
            chain.append(name)
            next = versions[name]?["trained_from"]?.stringValue
        }
        return chain
    }

    /// Night 1 promoted (v1) and night 2 run from it (v2, trained_from v1). Returns night 2's run.
    static func twoNights(_ fixture: PipelineFixture) async throws -> String {
        let first = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        try #require(try fixture.outputs(first)["promote"]?["promoted"] == .bool(true), "the first night must promote for this test")
        let second = try await enqueue(fixture, night: "2026-12-01")
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        try #require(try await registry(fixture)["v2"]?["trained_from"] == .string("v1"), "night 2 must register v2 started from v1")
        return second
    }

    @Test func forgettingAnExampleOfNightTwoRetiresItsChainTheExportAndTheNextNightFollowTheCleanAncestor() async throws {
        let fixture = try await PipelineFixture.make()
        // Each example is trained on once, so each night's snapshot holds only what arrived since the night before.
        try fixture.expectSuccess(await fixture.adapt(["data", "policy", "--lineage", "logbook", "--max-uses", "1"]))
        let night1 = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        try #require(try fixture.outputs(night1)["promote"]?["promoted"] == .bool(true), "the first night must promote for this test")
        try await Self.importNight(fixture, 2)
        let night2 = try await Self.enqueue(fixture, night: "2026-12-01")
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        #expect(try fixture.outputs(night2)["train"]?["init"]?["from"] == .string("logbook/v1"))
        if try fixture.outputs(night2)["promote"]?["promoted"] != .bool(true) {
            // The chain this test needs (v2 active, started from v1), whatever the gate made of night 2.
            try fixture.expectSuccess(await fixture.adapt(["registry", "promote", "logbook/v2", "--force"]))
        }
        #expect(try await Self.activeChain(fixture) == ["v2", "v1"])
        try await ActiveExportFollowsPointerTests.expectExportServes("v2", fixture)

        // Night 3 starts from v2 and has been judged when the example is forgotten.
        try await Self.importNight(fixture, 3)
        let night3 = try await Self.enqueue(fixture, night: "2026-12-02")
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle", "--workers", "prune,sample,train,eval"]))
        #expect(try fixture.outputs(night3)["train"]?["init"]?["from"] == .string("logbook/v2"))

        // An example night 2 trained on, and night 1 never saw.
        let example = try #require(try await ErasureTests().sampledExamples(fixture, run: night2, count: 1).first)
        #expect(example["source"] == .string("night-2"))
        let forget = try await fixture.adapt(["data", "forget", "--id", try #require(example["id"]?.stringValue),
                                              "--retire-adapters", "--json"])
        try fixture.expectSuccess(forget)
        let report = try JSON.decode(JSONValue.self, from: forget.stdout, context: "forget")
        #expect(report["adapter_versions"]?.arrayValue?.map { $0["version"] } == [.string("v2")], "\(forget.stdout)")
        let backToV1: JSONValue = .array([Self.move(from: .string("v2"), to: .string("v1"))])
        #expect(report["active_moves"] == backToV1, "\(forget.stdout)")
        // No version of the active chain descends from the forgotten example, and the export serves the ancestor.
        #expect(try await Self.activeChain(fixture) == ["v1"])
        #expect(try await Self.registry(fixture)["v2"]?["retired"] == .bool(true))
        try await ActiveExportFollowsPointerTests.expectExportServes("v1", fixture)

        // The night that ran from v2 during the retirement registers nothing.
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle", "--workers", "promote"]))
        let promote = try #require(try fixture.outputs(night3)["promote"])
        #expect(promote["promoted"] == .bool(false) && promote["reason"] == .string("parent_retired"), "\(promote)")
        #expect(try await Self.registry(fixture).keys.sorted() == ["v1", "v2"])

        // The next night starts from the clean ancestor.
        try await Self.importNight(fixture, 4)
        let night4 = try await Self.enqueue(fixture, night: "2026-12-03")
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let outputs = try fixture.outputs(night4)
        #expect(outputs["sample"]?["weights_parent"]?["version"] == .string("logbook/v1"))
        #expect(outputs["train"]?["init"] == .object(["from": .string("logbook/v1"), "reason": .string("active_version")]))
        #expect(try await Self.registry(fixture)["v3"]?["trained_from"] == .string("v1"))
        #expect(!(try await Self.activeChain(fixture)).contains("v2"))
    }

    @Test func ttlExpiryListsTheVersionsWhoseChainTrainedOnExpiredTextAndKeepsThemByDefault() async throws {
        let fixture = try await PipelineFixture.make()
        _ = try await Self.twoNights(fixture)
        let activeBefore = try await Self.activeChain(fixture)

        // A month and a half later (the pipeline's TTL is 30 days) the prune expires every training example.
        let later = try await Self.enqueue(fixture, night: "2027-01-15")
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle", "--workers", "prune"],
                                                      environment: [OffsetClock.variable: String(45 * 86_400_000)]))
        let prune = try #require(try fixture.outputs(later)["prune"])
        #expect((prune["deleted"]?.intValue ?? 0) > 0)
        #expect(prune["registry"]?["trained_on_expired"] == .array([.string("logbook/v1"), .string("logbook/v2")]), "\(prune)")
        #expect(prune["registry"]?["retired"] == .array([]) && prune["registry"]?["active_moves"] == .array([]), "\(prune)")
        let job = try #require(try fixture.queue().jobs(matching: .init(run: RunID.parse(later), kind: "prune")).first)
        let said = try fixture.queue().events(job: job.id).compactMap(\.message)
        #expect(said.contains { $0.contains("trained on by 2 adapter version(s)") && $0.contains("logbook/v1, logbook/v2")
                                && $0.contains("kept") }, "\(said)")

        let versions = try await Self.registry(fixture)
        #expect(versions.values.allSatisfy { $0["retired"] == .bool(false) })
        #expect(try await Self.activeChain(fixture) == activeBefore)
    }

    @Test func ttlExpiryWithTtlRetiresAdaptersRetiresTheChainAndTheNightTrainsFromZero() async throws {
        let fixture = try await PipelineFixture.make(pipeline: Self.retiringPipeline)
        let night2 = try await Self.twoNights(fixture)
        // Planned with the field on and nothing expired: the night replays equal.
        let replay = try await fixture.adapt(["replay", night2, "--check", "--json"])
        #expect(replay.status == 0, "\(replay.stdout) \(replay.stderr)")
        let active = try #require(try await Self.activeChain(fixture).first)
        let gguf = ActiveExportFollowsPointerTests.exports(fixture).appendingPathComponent("active.gguf")
        #expect(ActiveExportFollowsPointerTests.exists(gguf))

        let later = try await Self.enqueue(fixture, night: "2027-01-15")
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle", "--workers", "prune"],
                                                      environment: [OffsetClock.variable: String(45 * 86_400_000)]))
        let prune = try #require(try fixture.outputs(later)["prune"])
        #expect(prune["registry"]?["trained_on_expired"] == .array([.string("logbook/v1"), .string("logbook/v2")]), "\(prune)")
        #expect(prune["registry"]?["retired"] == .array([.string("logbook/v1"), .string("logbook/v2")]), "\(prune)")
        let toBase: JSONValue = .array([Self.move(from: .string(active), to: .null)])
        #expect(prune["registry"]?["active_moves"] == toBase, "\(prune)")
        let versions = try await Self.registry(fixture)
        #expect(versions.values.allSatisfy { $0["retired"] == .bool(true) && $0["active"] == .bool(false) }, "\(versions)")
        // The retired adapter is served no more.
        #expect(!ActiveExportFollowsPointerTests.exists(gguf), "the export still serves a version trained on expired text")

        // New examples arrive; the rest of the night trains from zero, since no clean version was ever active.
        try await Self.importNight(fixture, 2)
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let outputs = try fixture.outputs(later)
        #expect(outputs["sample"]?["weights_parent"] == .null)
        #expect(outputs["train"]?["init"] == .object(["from": .null, "reason": .string("no_active_version")]))
        #expect(try await Self.registry(fixture)["v3"]?["trained_from"] == .null)
    }
}
