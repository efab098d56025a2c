import AdaptCore
import Foundation
import Testing
import TestSupport

/// Only the engine's own gate report makes a version promotable (issue 41): `adapt eval --lineage L --version N`
/// scores a registered or imported version on the lineage's held-out set, and `registry promote` accepts that
/// report only while the adapter, the held-out set and the active version are those it was made with.
@Suite(.serialized) struct EngineGateTests {
    /// A fixture with the logbook lineage, an adapter trained on its training file with `seed`, registered as the
    /// lineage's next version through the command line.
    func trainAndRegister(_ fixture: PipelineFixture, seed: Int) async throws -> String {
        let out = fixture.directory.file("adapter-\(seed).bin").path
        let data = PipelineFixture.root.appendingPathComponent("pipelines/examples/logbook/train.jsonl").path
        try fixture.expectSuccess(await fixture.adapt(
            ["train", "--data", data, "--model", "tiny.gguf", "--out", out, "--steps", "24", "--rank", "4", "--lr", "0.01",
             "--batch-size", "2", "--max-length", "96", "--seed", "\(seed)", "--threads", "1"]))
        let added = try await fixture.adapt(["registry", "add", out, "--lineage", "logbook", "--json"])
        try fixture.expectSuccess(added)
        return try #require(try JSON.decode(JSONValue.self, from: added.stdout, context: "registry add")["version"]?.stringValue)
    }

    func eval(_ fixture: PipelineFixture, version: Int) async throws -> JSONValue {
        let result = try await fixture.adapt(["eval", "--lineage", "logbook", "--version", "\(version)", "--model",
                                              fixture.directory.state.models.appendingPathComponent("tiny.gguf").path, "--json"])
        try fixture.expectSuccess(result)
        return try JSON.decode(JSONValue.self, from: result.stdout, context: "eval output")
    }

    func promote(_ fixture: PipelineFixture, _ version: String) async throws -> ProcessResult {
        try await fixture.adapt(["registry", "promote", "logbook/\(version)"])
    }

    @Test func anImportedAdapterWithAnInventedReportIsNotPromotableUntilTheEngineScoresIt() async throws {
        let fixture = try await PipelineFixture.make()
        let model = fixture.directory.state.models.appendingPathComponent("tiny.gguf").path
        #expect(try await trainAndRegister(fixture, seed: 9) == "v1")
        let peft = fixture.directory.file("peft").path
        try fixture.expectSuccess(await fixture.adapt(["registry", "export", "logbook", "--version", "1", "--format", "peft",
                                                       "--out", peft, "--model", model]))
        // A report invented to look like the gate's: the option that took it is gone, and nothing is registered.
        let invented = fixture.directory.file("invented.json")
        try Data(#"{"outcome": "better", "n": 40, "statistic": 1, "p_value": 0.0001, "method": "exact", "zero_method": "wilcox", "alternative": "less", "alpha": 0.05}"#.utf8)
            .write(to: invented)
        let withReport = try await fixture.adapt(["registry", "add", "--lineage", "logbook", "--from-peft", peft, "--model", model,
                                                  "--gate-report", invented.path])
        #expect(withReport.status == 2, "\(withReport.stderr)")
        try fixture.expectSuccess(await fixture.adapt(["registry", "add", "--lineage", "logbook", "--from-peft", peft, "--model", model]))

        let refused = try await promote(fixture, "v2")
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("no gate report made by the engine"), "\(refused.stderr)")
        #expect(refused.stderr.contains("adapt eval --lineage logbook --version 2"), "\(refused.stderr)")
        let list = try JSON.decode(JSONValue.self, from: try await fixture.adapt(["registry", "list", "--json"]).stdout, context: "list")
        #expect(list.arrayValue?.contains { $0["active"] == .bool(true) } == false)

        let report = try await eval(fixture, version: 2)
        let v2 = try #require(list.arrayValue?.first { $0["version"] == .string("v2") })
        #expect(report["lineage"] == .string("logbook") && report["version"] == .string("v2"))
        #expect(report["adapter_digest"] == v2["digest"])
        #expect(report["held_out_digest"]?.stringValue?.count == 64)
        #expect(report["incumbent"] == .null)
        let n = try #require(report["n"]?.intValue)
        #expect(n >= 10 && report["pairs"]?.intValue == n)
        #expect(report["outcome"] == .string("better"), "\(report)")
        #expect((report["p_value"]?.doubleValue ?? 1) < 0.05)
        #expect(report["method"]?.stringValue != nil && report["statistic"]?.doubleValue != nil)
        let candidate = try #require(report["candidate_mean_nll"]?.doubleValue)
        let incumbent = try #require(report["incumbent_mean_nll"]?.doubleValue)
        #expect(candidate < incumbent)

        try fixture.expectSuccess(await promote(fixture, "v2"))
        let history = try JSON.decode(JSONValue.self, from: try await fixture.adapt(["registry", "history", "--json"]).stdout, context: "history")
        #expect(history.arrayValue?.last?["reason"] == .string("gate"))
    }

    @Test func aReportMadeBeforeTheActiveVersionMovedIsRefused() async throws {
        let fixture = try await PipelineFixture.make()
        #expect(try await trainAndRegister(fixture, seed: 9) == "v1")
        #expect(try await trainAndRegister(fixture, seed: 10) == "v2")
        #expect(try await eval(fixture, version: 1)["outcome"] == .string("better"))
        #expect(try await eval(fixture, version: 2)["outcome"] == .string("better"))
        try fixture.expectSuccess(await promote(fixture, "v2"))

        // v1 was compared with the base model; the active one is now v2.
        let refused = try await promote(fixture, "v1")
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("compared it with the base model; the active one is now v2"), "\(refused.stderr)")
        #expect(refused.stderr.contains("adapt eval --lineage logbook --version 1"), "\(refused.stderr)")
        let again = try await eval(fixture, version: 1)
        #expect(again["incumbent"]?["version"] == .string("v2"))
    }

    @Test func aReportMadeBeforeTheHeldOutSetGrewIsRefused() async throws {
        let fixture = try await PipelineFixture.make()
        #expect(try await trainAndRegister(fixture, seed: 9) == "v1")
        let first = try await eval(fixture, version: 1)
        #expect(first["outcome"] == .string("better"))

        let more = fixture.directory.file("more.jsonl")
        let lines = (0..<3).map { i in
            JSON.canonicalString(JSONValue.object(["prompt": .string("What is on the chart for leg \(i)?"),
                                                    "completion": .string("LOG ENTRY. Subject: leg \(i). Orders: hold the course.")]))
        }
        try Data(lines.joined(separator: "\n").utf8).write(to: more)
        try fixture.expectSuccess(await fixture.adapt(["data", "import", more.path, "--lineage", "logbook", "--held-out"]))

        let refused = try await promote(fixture, "v1")
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("made on held-out snapshot"), "\(refused.stderr)")
        let active = try JSON.decode(JSONValue.self, from: try await fixture.adapt(["registry", "list", "--json"]).stdout, context: "list")
        #expect(active.arrayValue?.contains { $0["active"] == .bool(true) } == false)

        let second = try await eval(fixture, version: 1)
        #expect(second["held_out_digest"] != first["held_out_digest"])
        #expect(second["n"]?.intValue == (first["n"]?.intValue ?? 0) + 3)
        if second["outcome"] == .string("better") { try fixture.expectSuccess(await promote(fixture, "v1")) }
    }

    /// The nightly promote step records its eval step's report as an engine report, bound to that run's held-out
    /// snapshot, and promotes by the same rule: after a rollback the report still promotes the version while the
    /// held-out set is the one the night scored, and no longer once it grew.
    @Test func theNightsReportFollowsTheSameRuleAsTheEvalCommands() async throws {
        let fixture = try await PipelineFixture.make()
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let outputs = try fixture.outputs(run)
        try #require(outputs["promote"]?["promoted"]?.boolValue == true, "the night must promote for this test")
        let snapshot = try #require(outputs["sample"]?["held_out_snapshot"]?.stringValue)

        try fixture.expectSuccess(await fixture.adapt(["registry", "rollback", "--lineage", "logbook"]))
        try fixture.expectSuccess(await promote(fixture, "v1"))
        try fixture.expectSuccess(await fixture.adapt(["registry", "rollback", "--lineage", "logbook"]))

        let more = fixture.directory.file("more.jsonl")
        try Data(#"{"prompt": "Where is the spare rope?", "completion": "LOG ENTRY. Subject: rope. Orders: aft locker."}"#.utf8).write(to: more)
        try fixture.expectSuccess(await fixture.adapt(["data", "import", more.path, "--lineage", "logbook", "--held-out"]))
        let refused = try await promote(fixture, "v1")
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("made on held-out snapshot \(snapshot.prefix(12))"), "\(refused.stderr)")
    }
}
