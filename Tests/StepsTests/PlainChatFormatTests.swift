import AdaptCore
import Foundation
import JobQueue
import Model
import Pipelines
import Testing
import TestSupport

/// A base model has no chat template: every command that formats messages refuses it until told
/// `--chat-format plain` (a pipeline file: `train.chat_format`), and the nightly run records the format it used.
@Suite(.serialized) struct PlainChatFormatTests {
    @Test func aPipelinesChatFormatsAreTheModelsConventions() {
        #expect(ChatFormat.allCases.map(\.rawValue) == ChatConvention.allCases.map(\.rawValue))
    }

    /// The fixture with a template-less tiny model, `base.gguf`, beside the usual one.
    func fixture(chatFormat: String?) async throws -> (PipelineFixture, String) {
        var pipeline = PipelineFixture.pipeline(steps: 8)
        if let chatFormat {
            pipeline = pipeline.replacingOccurrences(of: #""train": {"#, with: #""train": {"chat_format": "\#(chatFormat)", "#)
        }
        let fixture = try await PipelineFixture.make(pipeline: pipeline)
        let model = fixture.directory.state.models.appendingPathComponent("base.gguf").path
        try fixture.expectSuccess(await fixture.adapt(["model", "tiny", "--no-chat-template", "--out", model]))
        return (fixture, model)
    }

    @Test func enqueueRefusesABaseModelWithoutAChatFormatAndStoresNothing() async throws {
        let (fixture, _) = try await fixture(chatFormat: nil)
        let result = try await fixture.adapt(["enqueue", "nightly", "--lineage", "logbook", "--pipeline", fixture.pipelinePath,
                                              "--model", "base.gguf", "--night", fixture.night])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("no chat template") && result.stderr.contains("--chat-format plain")
                && result.stderr.contains(#""chat_format": "plain""#), "\(result.stderr)")
        let runs = try await fixture.adapt(["runs", "--json"])
        #expect(try JSON.decode(JSONValue.self, from: runs.stdout, context: "runs").arrayValue?.isEmpty == true)
    }

    @Test func theNightlyRunOnABaseModelTrainsAndScoresInThePlainFormatItRecordsAndReplays() async throws {
        let (fixture, model) = try await fixture(chatFormat: "plain")
        let result = try await fixture.adapt(["enqueue", "nightly", "--lineage", "logbook", "--pipeline", fixture.pipelinePath,
                                              "--model", "base.gguf", "--night", fixture.night, "--json"])
        try fixture.expectSuccess(result)
        let run = try #require(try JSON.decode(JSONValue.self, from: result.stdout, context: "enqueue")["run_id"]?.stringValue)
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let runID = try #require(RunID.parse(run))
        let record = try fixture.queue().run(runID)
        #expect(record.isFinished && record.counts[.succeeded] == 5)
        #expect(record.manifest["definition"]?["train"]?["chat_format"] == .string("plain"))
        let jobs = try fixture.queue().jobs(matching: .init(run: runID))
        for kind in ["train", "eval"] {
            #expect(jobs.first { $0.name == kind }?.input["chat_format"] == .string("plain"), "\(kind)")
        }
        #expect(try fixture.outputs(run)["train"]?["chat_convention"] == .string("plain"))

        // Replay formats with the recorded format, not with whatever the model file says.
        let replay = try await fixture.adapt(["replay", run, "--check", "--json"])
        #expect(replay.status == 0, "\(replay.stdout) \(replay.stderr)")

        // Generating with the lineage's adapter needs the format too: refused without it, answered with it.
        if try fixture.outputs(run)["promote"]?["promoted"]?.boolValue != true {
            try fixture.expectSuccess(await fixture.adapt(["promote", "logbook/v1", "--force"]))
        }
        let refused = try await fixture.adapt(["generate", "--model", model, "--lineage", "logbook", "--prompt", "hello", "--max-tokens", "4"])
        #expect(refused.status == 1 && refused.stderr.contains("--chat-format plain"), "\(refused.stderr)")
        let answered = try await fixture.adapt(["generate", "--model", model, "--lineage", "logbook", "--prompt", "hello",
                                                "--max-tokens", "4", "--chat-format", "plain", "--json"])
        try fixture.expectSuccess(answered)
    }

    @Test func trainAndScoreNeedTheChatFormatOfABaseModelAndRecordIt() async throws {
        let (fixture, model) = try await fixture(chatFormat: nil)
        let data = PipelineFixture.root.appendingPathComponent("pipelines/examples/logbook/held_out.jsonl").path
        let out = fixture.directory.file("a.bin").path
        let train = ["train", "--data", data, "--model", model, "--out", out, "--steps", "2", "--max-length", "64"]
        let refused = try await fixture.adapt(train)
        #expect(refused.status == 1 && refused.stderr.contains("--chat-format plain"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
        try fixture.expectSuccess(await fixture.adapt(train + ["--chat-format", "plain"]))
        #expect(try await fixture.adapt(train + ["--chat-format", "plian"]).status == 2)

        let score = ["score", "--model", model, "--prompt", "hello", "--completion", " world", "--adapter", out]
        // Unformatted scoring reads the base model as plain, the format the adapter was trained in.
        try fixture.expectSuccess(await fixture.adapt(score))
        let chat = try await fixture.adapt(score + ["--chat"])
        #expect(chat.status == 1 && chat.stderr.contains("--chat-format plain"), "\(chat.stderr)")
        try fixture.expectSuccess(await fixture.adapt(score + ["--chat", "--chat-format", "plain"]))
        // An adapter trained in the plain format is refused under another one.
        let other = try await fixture.adapt(score + ["--chat", "--chat-format", "chatml"])
        #expect(other.status == 1, "\(other.stderr)")
    }
}
