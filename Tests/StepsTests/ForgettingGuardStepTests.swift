import AdaptCore
import Foundation
import Testing
import TestSupport

/// The forgetting guard and the minimum effect end to end on the tiny model (issue 42, items 4 and 5), through the
/// built executables.
///
/// The tiny model's weights are random, so its canary scores measure nothing about language: what these tests show
/// is the mechanism. An adapter that moves the model far (a high learning rate) scatters the margins, cannot show it
/// keeps them, and is refused as `forgets` although its held-out NLL is much lower; one trained to say one phrase to
/// every prompt (the constructed drift: the lineage's held-out set asks for it too) keeps its margins but makes the
/// canary's plain replies less likely, and is refused on fluency; a gentle one passes both parts.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ForgettingGuardStepTests {
    static let data = PipelineFixture.root.appendingPathComponent("pipelines/examples/logbook/train.jsonl").path

    /// Trains an adapter on the logbook training file and registers it; returns its version name.
    func trainAndRegister(_ fixture: PipelineFixture, learningRate: String, data: String = Self.data) async throws -> String {
        let out = fixture.directory.file("adapter-\(learningRate).bin").path
        try fixture.expectSuccess(await fixture.adapt(
            ["train", "--data", data, "--model", "tiny.gguf", "--out", out, "--steps", "24", "--rank", "4", "--lr", learningRate,
             "--batch-size", "2", "--max-length", "96", "--seed", "9", "--threads", "1"]))
        let added = try await fixture.adapt(["registry", "add", out, "--lineage", "logbook", "--json"])
        try fixture.expectSuccess(added)
        return try #require(try JSON.decode(JSONValue.self, from: added.stdout, context: "registry add")["version"]?.stringValue)
    }

    /// The constructed drift: the logbook's prompts, every completion (training and held-out) one repeated word.
    static func importDriftLineage(_ fixture: PipelineFixture) async throws {
        for name in ["train.jsonl", "held_out.jsonl"] {
            let original = try String(contentsOf: PipelineFixture.root.appendingPathComponent("pipelines/examples/logbook/\(name)"),
                                      encoding: .utf8)
            let lines = try original.split(separator: "\n").map { line in
                var fields = try #require(try JSON.decode(JSONValue.self, from: Data(line.utf8), context: name).objectValue)
                fields["completion"] = .string(Array(repeating: "LOG", count: 12).joined(separator: " "))
                return JSON.canonicalString(JSONValue.object(fields))
            }
            let file = fixture.directory.file("drift-\(name)")
            try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: file)
            try fixture.expectSuccess(await fixture.adapt(["data", "import", file.path, "--lineage", "logbook"]))
        }
    }

    func evalWithCanary(_ fixture: PipelineFixture, _ version: String) async throws -> JSONValue {
        let result = try await fixture.adapt(["eval", "--lineage", "logbook", "--version", version, "--canary", "--model",
                                              fixture.directory.state.models.appendingPathComponent("tiny.gguf").path, "--json"])
        try fixture.expectSuccess(result)
        return try JSON.decode(JSONValue.self, from: result.stdout, context: "eval output")
    }

    @Test func aDriftingAdapterIsRefusedAsForgetsAndOnlyForceNamingTheGuardPromotesIt() async throws {
        let fixture = try await PipelineFixture.make()
        let gentle = try await trainAndRegister(fixture, learningRate: "0.001")
        let drifting = try await trainAndRegister(fixture, learningRate: "0.01")

        let kept = try await evalWithCanary(fixture, gentle)
        #expect(kept["outcome"] == .string("better"), "\(kept)")
        #expect(kept["canary"]?["outcome"] == .string("passes"))
        #expect(kept["canary"]?["margin_outcome"] == .string("passes") && kept["canary"]?["fluency_outcome"] == .string("passes"))
        #expect(kept["canary_margins"]?["candidate_right_nll"]?.arrayValue?.count == 36)
        #expect(kept["canary"]?["canary"] == .string("canary-v1") && kept["canary"]?["items"] == .int(36))
        #expect(kept["min_effect"]?.doubleValue == 0.01)

        let lost = try await evalWithCanary(fixture, drifting)
        #expect(lost["outcome"] == .string("forgets"), "\(lost)")
        #expect(lost["canary"]?["outcome"] == .string("fails"))
        #expect(lost["canary"]?["margin_outcome"] == .string("fails"), "its margins scatter")
        #expect((lost["p_value"]?.doubleValue ?? 1) < 0.05, "on the held-out set alone it is better")
        #expect(lost["reason"]?.stringValue?.contains("forgetting guard") == true)
        // The canary is scored once under the base model: the second evaluation reads it from the score cache.
        #expect((lost["cached_scores"]?.intValue ?? 0) >= 72, "\(lost["cached_scores"] ?? .null)")

        let refused = try await fixture.adapt(["registry", "promote", "logbook/\(drifting)"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("'forgets'") && refused.stderr.contains("forgetting guard"), "\(refused.stderr)")
        let forced = try await fixture.adapt(["registry", "promote", "logbook/\(drifting)", "--force"])
        try fixture.expectSuccess(forced)
        #expect(forced.stderr.contains("--force bypassed") && forced.stderr.contains("forgetting guard"), "\(forced.stderr)")
        let history = try JSON.decode(JSONValue.self, from: try await fixture.adapt(["registry", "history", "--json"]).stdout,
                                      context: "history")
        let move = try #require(history.arrayValue?.last)
        #expect(move["reason"] == .string("force"))
        #expect(move["bypassed"]?.stringValue?.contains("forgets") == true, "\(move)")
    }

    @Test func anAdapterThatSaysOnePhraseToEverythingKeepsItsMarginsButFailsOnFluency() async throws {
        let fixture = try await PipelineFixture.make(importData: false)
        try await Self.importDriftLineage(fixture)
        let drifting = try await trainAndRegister(fixture, learningRate: "0.01", data: fixture.directory.file("drift-train.jsonl").path)
        let lost = try await evalWithCanary(fixture, drifting)
        #expect(lost["outcome"] == .string("forgets"), "\(lost)")
        let canary = try #require(lost["canary"])
        #expect(canary["margin_outcome"] == .string("passes"), "the margin alone does not see it: \(canary)")
        #expect(canary["fluency_outcome"] == .string("fails") && canary["outcome"] == .string("fails"))
        #expect((canary["median_fluency_loss"]?.doubleValue ?? 0) > 0.5, "\(canary)")
        #expect(canary["fluency_delta"]?.doubleValue == 1 && canary["delta"]?.doubleValue == 2)
    }

    static func pipeline(learningRate: String, canary: String = "{}") -> String {
        """
        {"seed": 7,
         "train": {"steps": 16, "checkpoint_interval": 4, "batch_size": 2, "warmup_steps": 2, "max_length": 96,
                   "early_stopping": null, "learning_rate": \(learningRate), "init": "fresh"},
         "eval": {"canary": \(canary), "on_worse": "quarantine"},
         "device": {"min_available_memory_mb": 64}}
        """
    }

    /// A night of the drift lineage; `plannedBeforeTheFluencyPart` takes `fluency_delta` out of the eval input before
    /// any worker runs it, as a step planned with the margin-only guard has it.
    static func driftNight(plannedBeforeTheFluencyPart: Bool) async throws -> (fixture: PipelineFixture, run: String) {
        let fixture = try await PipelineFixture.make(pipeline: Self.pipeline(learningRate: "0.02", canary: #"{"delta": 1}"#),
                                                     importData: false)
        try await Self.importDriftLineage(fixture)
        let run = try await fixture.enqueue()
        if plannedBeforeTheFluencyPart {
            try fixture.queue().database.run("UPDATE jobs SET input = json_remove(input, '$.canary.fluency_delta') WHERE name = 'eval'")
        }
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        return (fixture, run)
    }

    @Test func aNightThatForgetsIsNotPromotedNorQuarantinedAndReplaysEqual() async throws {
        let (fixture, run) = try await Self.driftNight(plannedBeforeTheFluencyPart: false)
        let outputs = try fixture.outputs(run)
        let eval = try #require(outputs["eval"])
        #expect(eval["outcome"] == .string("forgets"), "\(eval["gate"] ?? .null)")
        #expect(eval["gate"]?["outcome"] == .string("forgets"))
        #expect(eval["gate"]?["canary"]?["outcome"] == .string("fails"))
        #expect(eval["gate"]?["canary"]?["fluency_outcome"] == .string("fails"), "\(eval["gate"]?["canary"] ?? .null)")
        #expect(eval["canary_margins"]?["base"]?.arrayValue?.count == 36)
        #expect(eval["canary_margins"]?["candidate"]?.arrayValue?.count == 36)
        #expect(eval["canary_margins"]?["base_right_nll"]?.arrayValue?.count == 36)
        #expect(eval["canary_margins"]?["candidate_right_nll"]?.arrayValue?.count == 36)
        // Quarantine is for `worse` only: nothing is attributed or quarantined.
        #expect(eval["attribution"] == .null && eval["quarantined_sources"] == .array([]))
        #expect(outputs["promote"]?["promoted"] == .bool(false))
        #expect(outputs["promote"]?["reason"] == .string("gate_forgets"))
        let list = try JSON.decode(JSONValue.self, from: try await fixture.adapt(["registry", "list", "--json"]).stdout, context: "list")
        #expect(list.arrayValue?.contains { $0["active"] == .bool(true) } == false)

        let report = try JSON.decode(JSONValue.self, from: try await fixture.adapt(["replay", run, "--check", "--json"]).stdout,
                                     context: "replay")
        #expect(report["equal"] == .bool(true), "\(report["first_difference"] ?? .null)")
    }

    @Test func aNightPlannedBeforeTheFluencyPartRunsTheMarginAloneAndReplaysEqual() async throws {
        let (fixture, run) = try await Self.driftNight(plannedBeforeTheFluencyPart: true)
        let eval = try #require(try fixture.outputs(run)["eval"])
        let canary = try #require(eval["gate"]?["canary"]?.objectValue)
        #expect(canary["fluency_delta"] == nil && canary["fluency_outcome"] == nil && canary["median_fluency_loss"] == nil)
        #expect(canary["delta"]?.doubleValue == 1)
        // The margin-only rule's reason, word for word as it was recorded before the fluency part.
        let reason = try #require(canary["reason"]?.stringValue)
        #expect(reason.hasPrefix("the candidate ") && reason.contains(" of the base's margin at alpha 0.05") && !reason.contains("fluency"),
                "\(reason)")
        #expect(eval["canary_margins"]?["base_right_nll"] == nil && eval["canary_margins"]?["candidate"]?.arrayValue?.count == 36)
        let report = try JSON.decode(JSONValue.self, from: try await fixture.adapt(["replay", run, "--check", "--json"]).stdout,
                                     context: "replay")
        #expect(report["equal"] == .bool(true), "\(report["first_difference"] ?? .null)")
    }

    @Test func aNightThatKeepsTheMarginsIsPromotedWithTheGuardsReport() async throws {
        let fixture = try await PipelineFixture.make(pipeline: Self.pipeline(learningRate: "0.01"))
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let outputs = try fixture.outputs(run)
        let eval = try #require(outputs["eval"])
        #expect(eval["outcome"] == .string("better"), "\(eval["gate"] ?? .null)")
        #expect(eval["gate"]?["canary"]?["outcome"] == .string("passes"))
        #expect(eval["gate"]?["canary"]?["delta"]?.doubleValue == 2 && eval["gate"]?["canary"]?["alpha"]?.doubleValue == 0.05)
        #expect(eval["gate"]?["canary"]?["fluency_delta"]?.doubleValue == 1)
        #expect(eval["gate"]?["canary"]?["fluency_outcome"] == .string("passes"))
        #expect(eval["timing"]?["canary_base_scores_cached"] == .int(0))
        #expect(outputs["promote"]?["promoted"] == .bool(true))

        // The next night reads the base model's canary scores from the cache: it scores the canary once, under its candidate.
        let next = try await QuarantineStepTests.enqueue(fixture, night: "2026-12-01")
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let second = try #require(try fixture.outputs(next)["eval"])
        #expect(second["timing"]?["canary_base_scores_cached"] == .int(72), "\(second["timing"] ?? .null)")
        #expect(second["canary_margins"]?["base"] == eval["canary_margins"]?["base"])
    }
}
