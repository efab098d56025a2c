import AdaptCore
import Foundation
import JobQueue
import Storage
import Testing
import TestSupport

/// A lineage's first nights: its held-out set is large enough for the gate as soon as it can be, and runs
/// recorded under the earlier held-out rule still replay.
@Suite(.serialized) struct SmallLineageGateTests {
    /// The first `count` lines of the bundled logbook lineage, imported into `logbook`.
    static func importLogbook(_ fixture: PipelineFixture, count: Int) async throws -> JSONValue {
        let source = PipelineFixture.root.appendingPathComponent("pipelines/examples/logbook/train.jsonl")
        let lines = try String(contentsOf: source, encoding: .utf8).split(separator: "\n").prefix(count)
        try #require(lines.count == count)
        let file = fixture.directory.file("first-\(count).jsonl")
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: file)
        let result = try await fixture.adapt(["data", "import", file.path, "--lineage", "logbook", "--json"])
        try fixture.expectSuccess(result)
        return try JSON.decode(JSONValue.self, from: result.stdout, context: "import report")
    }

    /// 40 logbook lines of which the id hash alone holds out 8 at 20 % (the issue's lineage: 8 pairs, below
    /// the gate's 10), found by importing all of them into a scratch state first.
    static func fortyLinesEightHeldOutByHash(_ fixture: PipelineFixture) async throws -> URL {
        let source = PipelineFixture.root.appendingPathComponent("pipelines/examples/logbook/train.jsonl")
        let scratch = fixture.directory.file("scratch-state").path
        try fixture.expectSuccess(await blocking {
            try Executables.run("adapt", ["--state", scratch, "data", "import", source.path, "--lineage", "logbook"])
        })
        let list = try await blocking { try Executables.run("adapt", ["--state", scratch, "data", "list", "--json"]) }
        try fixture.expectSuccess(list)
        var position: [String: Double] = [:]
        for example in try JSON.decode(JSONValue.self, from: list.stdout, context: "data list").arrayValue ?? [] {
            guard let id = example["id"]?.stringValue, let prompt = example["prompt"]?.stringValue else { continue }
            let key = UInt64(Digest.sha256("heldout:" + id).hex.prefix(16), radix: 16) ?? 0
            position[prompt] = Double(key) / 18_446_744_073_709_551_616.0
        }
        var byHash: [Substring] = [], others: [Substring] = []
        for line in try String(contentsOf: source, encoding: .utf8).split(separator: "\n") {
            let prompt = try JSON.decode(JSONValue.self, from: String(line), context: "line")["prompt"]?.stringValue ?? ""
            let p = try #require(position[prompt])
            if p < 0.2 { byHash.append(line) } else { others.append(line) }
        }
        try #require(byHash.count >= 8 && others.count >= 32)
        let file = fixture.directory.file("forty.jsonl")
        try Data(((byHash.prefix(8) + others.prefix(32)).joined(separator: "\n") + "\n").utf8).write(to: file)
        return file
    }

    @Test func aFortyExampleLineageWhoseCandidateImprovesEveryHeldOutExampleIsPromotedOnItsFirstNight() async throws {
        let fixture = try await PipelineFixture.make(importData: false)
        let file = try await Self.fortyLinesEightHeldOutByHash(fixture)
        let imported = try await fixture.adapt(["data", "import", file.path, "--lineage", "logbook", "--json"])
        try fixture.expectSuccess(imported)
        let report = try JSON.decode(JSONValue.self, from: imported.stdout, context: "import report")
        #expect(report["imported"]?.intValue == 40)
        #expect(report["held_out"]?.intValue == 10, "8 by the hash, topped up to the gate's 10: \(report)")
        #expect(report["gate_readiness"]?["can_be_judged"]?.boolValue == true, "\(report)")
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))

        let record = try fixture.queue().run(try #require(RunID.parse(run)))
        #expect(record.manifest["held_out_rule"]?.intValue == 2)
        let outputs = try fixture.outputs(run)
        let heldOut = try #require(outputs["sample"]?["held_out_examples"]?.intValue)
        #expect(heldOut >= 10, "the split holds out at least the gate's 10 pairs")
        let eval = try #require(outputs["eval"])
        #expect(eval["gate"]?["pairs"]?.intValue == heldOut)
        #expect(eval["gate"]?["min_pairs"]?.intValue == 10)
        #expect(eval["gate"]?["more_pairs_needed"]?.intValue == 0)
        #expect(eval["gate_readiness"]?["can_be_judged"]?.boolValue == true)
        let candidate = (eval["candidate_scores"]?.arrayValue ?? []).compactMap(\.doubleValue)
        let incumbent = (eval["incumbent_scores"]?.arrayValue ?? []).compactMap(\.doubleValue)
        try #require(candidate.count == heldOut && incumbent.count == heldOut)
        #expect(zip(candidate, incumbent).allSatisfy { $0 < $1 }, "the candidate improves every held-out example")
        #expect(eval["outcome"]?.stringValue == "better", "\(eval["gate"] ?? .null)")
        #expect(outputs["promote"]?["promoted"]?.boolValue == true)
    }

    @Test func aRunRecordedUnderTheOldHeldOutRuleReplaysEqual() async throws {
        let fixture = try await PipelineFixture.make(importData: false)
        _ = try await Self.importLogbook(fixture, count: 40)
        // A lineage stored before the fill-first rule: a floor of 8 and (fraction 0) nothing held out yet.
        let database = try Database(path: fixture.directory.state.database.path, durability: .normal)
        try database.run("UPDATE replay_lineages SET min_held_out = 8, held_out_fraction = 0 WHERE name = 'logbook'")
        try database.run("UPDATE replay_examples SET split = 'train' WHERE lineage = 'logbook'")
        let run = try await fixture.enqueue()
        // Planned as before the rule was recorded: no held_out_rule in the manifest.
        try database.run("UPDATE job_runs SET manifest = json_remove(manifest, '$.held_out_rule') WHERE unique_key = ?",
                         "logbook/\(fixture.night)")
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))

        let outputs = try fixture.outputs(run)
        #expect(outputs["sample"]?["held_out_examples"]?.intValue == 8, "the old rule: min(8, 40 / 2), not the gate's 10")
        let eval = try #require(outputs["eval"])
        #expect(eval["outcome"]?.stringValue == "not_enough_evidence")
        #expect(eval["gate"]?["more_pairs_needed"] == nil && eval["gate_readiness"] == nil, "the report keeps the shape of its time")

        let replay = try await fixture.adapt(["replay", run, "--check", "--json"])
        #expect(replay.status == 0, "\(replay.stdout) \(replay.stderr)")
        let equal = try JSON.decode(JSONValue.self, from: replay.stdout, context: "replay")
        #expect(equal["equal"]?.boolValue == true, "\(equal)")

        // The manifest is what selects the rule: recorded as the current one, the same run no longer replays.
        try database.run("UPDATE job_runs SET manifest = json_set(manifest, '$.held_out_rule', 2) WHERE unique_key = ?",
                         "logbook/\(fixture.night)")
        let changed = try await fixture.adapt(["replay", run, "--check", "--json"])
        let difference = try JSON.decode(JSONValue.self, from: changed.stdout, context: "replay")
        #expect(difference["equal"]?.boolValue == false)
        #expect(difference["first_difference"]?["step"]?.stringValue == "sample", "\(difference)")
    }
}
