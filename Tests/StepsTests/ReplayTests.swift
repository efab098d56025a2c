import AdaptCore
import Foundation
import Testing
import TestSupport

/// `adapt replay RUN --check`: a recorded run replays with every digest equal; a changed input is named.
@Suite(.serialized) struct ReplayTests {
    func replay(_ fixture: PipelineFixture, _ run: String) async throws -> (status: Int32, report: JSONValue) {
        let result = try await fixture.adapt(["replay", run, "--check", "--json"])
        let report = try JSON.decode(JSONValue.self, from: result.stdout, context: "replay output: \(result.stderr)")
        return (result.status, report)
    }

    @Test func recordedRunReplaysWithEveryDigestEqual() async throws {
        let fixture = try await PipelineFixture.make()
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let (status, report) = try await replay(fixture, run)
        #expect(status == 0)
        #expect(report["equal"]?.boolValue == true)
        #expect(report["first_difference"] == .null)
        #expect(report["run_id"]?.stringValue == run)
        #expect(report["steps"]?.arrayValue?.map { $0["name"]?.stringValue ?? "" } == ["prune", "sample", "train", "eval", "promote"])
    }

    @Test func replayOfPruneAndSampleAloneReproducesTheSnapshots() async throws {
        let fixture = try await PipelineFixture.make()
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--workers", "prune,sample", "--exit-when-idle"]))
        let (status, report) = try await replay(fixture, run)
        #expect(status == 0)
        #expect(report["equal"]?.boolValue == true)
        #expect(report["steps"]?.arrayValue?.count == 2)
    }

    @Test func aChangedBaseModelIsCaughtAndNamed() async throws {
        let fixture = try await PipelineFixture.make()
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let model = fixture.directory.state.models.appendingPathComponent("tiny.gguf")
        let before = try Digest.sha256(fileAt: model)
        try fixture.expectSuccess(await fixture.adapt(["model", "tiny", "--seed", "1", "--out", model.path]))
        let after = try Digest.sha256(fileAt: model)

        let (status, report) = try await replay(fixture, run)
        #expect(status == 1)
        #expect(report["equal"]?.boolValue == false)
        let difference = try #require(report["first_difference"])
        #expect(difference["step"]?.stringValue == "train")
        #expect(difference["field"]?.stringValue == "inputs.base_model")
        #expect(difference["expected"]?.stringValue == before.hex)
        #expect(difference["actual"]?.stringValue == after.hex)
    }

    @Test func aChangedTrainingInputIsCaughtAtTheFirstValueThatMoves() async throws {
        let fixture = try await PipelineFixture.make()
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        // Tamper with the recorded input of the train step (its learning rate): the snapshots and the model
        // still agree, so the first compared field that moves is the adapter (results are compared by name).
        let queue = try fixture.queue()
        try queue.database.run("UPDATE jobs SET input = json_set(input, '$.learning_rate', 0.02) WHERE name = 'train'")
        let (status, report) = try await replay(fixture, run)
        #expect(status == 1)
        let difference = try #require(report["first_difference"])
        #expect(difference["step"]?.stringValue == "train")
        #expect(difference["field"]?.stringValue == "adapter_blob")
    }
}
