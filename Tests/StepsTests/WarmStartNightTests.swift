import AdaptCore
import Foundation
import JobQueue
import Storage
import Testing
import TestSupport

/// A night's candidate starts from the lineage's active version (issue 42): the sample step fixes the weights
/// parent, the train step starts from it (or from zero, saying why), the registry records it as `trained_from`,
/// and replay and resume stay bit-exact.
@Suite(.serialized, .timeLimit(.minutes(10))) struct WarmStartNightTests {
    /// Long enough for the train step to be killed between two checkpoints on the tiny model.
    static let pipeline = PipelineFixture.pipeline(steps: 120, checkpointInterval: 10)

    /// Night 1 run and promoted (v1 active); night 2 enqueued. Returns night 1's outputs and night 2's run id.
    static func secondNight(_ fixture: PipelineFixture, extra: [String] = []) async throws -> (night1: [String: JSONValue], run: String) {
        let first = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let night1 = try fixture.outputs(first)
        try #require(night1["promote"]?["promoted"]?.boolValue == true, "the first night must promote for this test")
        let result = try await fixture.adapt(["enqueue", "nightly", "--lineage", "logbook", "--pipeline", fixture.pipelinePath,
                                              "--model", "tiny.gguf", "--night", "2026-12-01", "--seed", "8", "--json"] + extra)
        try fixture.expectSuccess(result)
        let run = try #require(try JSON.decode(JSONValue.self, from: result.stdout, context: "enqueue")["run_id"]?.stringValue)
        return (night1, run)
    }

    static func registry(_ fixture: PipelineFixture) async throws -> [JSONValue] {
        let list = try await fixture.adapt(["registry", "list", "--json"])
        try fixture.expectSuccess(list)
        return try #require(try JSON.decode(JSONValue.self, from: list.stdout, context: "registry list").arrayValue)
    }

    @Test func nightTwoStartsFromNightOnesVersionReplaysEqualAndResumesBitExactAfterSIGKILL() async throws {
        let fixture = try await PipelineFixture.make(pipeline: Self.pipeline)
        let (night1, run) = try await Self.secondNight(fixture)
        // Night 1 had no active version: it trained from zero and said so.
        #expect(night1["sample"]?["weights_parent"] == .null)
        #expect(night1["train"]?["init"] == .object(["from": .null, "reason": .string("no_active_version")]))
        let v1 = try #require(night1["train"]?["adapter_blob"])

        // Night 2's train worker is killed with SIGKILL once it has a checkpoint; another worker resumes it.
        for kind in ["prune", "sample"] {
            try fixture.expectSuccess(await Executables.runAsync("adapt-\(kind)-worker", ["--state", fixture.statePath, "--exit-when-idle"]))
        }
        let queue = try fixture.queue()
        let runID: RunID = try #require(RunID.parse(run))
        let train = try #require(try queue.jobs(matching: .init(run: runID, kind: "train")).first)
        let worker = try Executables.start("adapt-train-worker", ["--state", fixture.statePath, "--exit-when-idle", "--lease-ms", "1000"],
                                           outputIn: fixture.directory.url)
        let deadline = ContinuousClock.now + .seconds(120)
        while try queue.checkpointPointer(job: train.id) == nil, worker.isRunning, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(2))
        }
        worker.send(SIGKILL)
        _ = try await blocking { worker.wait() }
        try #require(try queue.job(train.id).state != .succeeded, "the train step finished before it could be killed")
        try await Task.sleep(for: .milliseconds(1100))
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))

        let outputs = try fixture.outputs(run)
        #expect(try queue.events(job: train.id).contains { $0.message?.hasPrefix("resumed from checkpoint") == true })
        #expect(outputs["sample"]?["weights_parent"] == .object(["version": .string("logbook/v1"), "adapter_blob": v1]))
        #expect(outputs["train"]?["init"] == .object(["from": .string("logbook/v1"), "reason": .string("active_version")]))
        #expect(outputs["train"]?["inputs"]?["weights_parent"] == v1)
        let versions = try await Self.registry(fixture)
        #expect(versions.map { $0["trained_from"] } == [.null, .string("v1")])

        // Replay re-executes the night uninterrupted in an empty scratch state: the resumed run's bits.
        let replay = try await fixture.adapt(["replay", run, "--check", "--json"])
        #expect(replay.status == 0, "\(replay.stdout) \(replay.stderr)")
        let bundle = fixture.directory.file("night-2.bundle").path
        try fixture.expectSuccess(await fixture.adapt(["run", "export", run, "--out", bundle, "--include-user-data"]))
        let fromBundle = try await blocking {
            try Executables.run("adapt", ["replay", "--bundle", bundle, "--model", fixture.directory.state.models.appendingPathComponent("tiny.gguf").path,
                                          "--check", "--json"])
        }
        #expect(fromBundle.status == 0, "\(fromBundle.stdout) \(fromBundle.stderr)")
    }

    @Test func anIncompatibleActiveVersionTrainsFromZeroWithTheReason() async throws {
        let fixture = try await PipelineFixture.make()
        let wider = fixture.directory.file("wider.json")
        try Data("""
            {"seed": 7, "train": {"steps": 8, "rank": 4, "batch_size": 2, "warmup_steps": 2, "max_length": 96,
                                  "early_stopping": null, "learning_rate": 0.01},
             "device": {"min_available_memory_mb": 64}}
            """.utf8).write(to: wider)
        let first = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        try #require(try fixture.outputs(first)["promote"]?["promoted"]?.boolValue == true, "the first night must promote for this test")
        let result = try await fixture.adapt(["enqueue", "nightly", "--lineage", "logbook", "--pipeline", wider.path,
                                              "--model", "tiny.gguf", "--night", "2026-12-01", "--json"])
        try fixture.expectSuccess(result)
        let run = try #require(try JSON.decode(JSONValue.self, from: result.stdout, context: "enqueue")["run_id"]?.stringValue)
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let outputs = try fixture.outputs(run)
        #expect(outputs["sample"]?["weights_parent"]?["version"] == .string("logbook/v1"))
        #expect(outputs["train"]?["init"] == .object(["from": .null, "reason": .string("incompatible"),
                                                       "mismatch": .string("logbook/v1: rank 8 (this run: 4)")]))
        #expect(outputs["train"]?["inputs"]?["weights_parent"] == nil)
        #expect(try await Self.registry(fixture).map { $0["trained_from"] } == [.null, .null])
    }

    @Test func aRunPlannedBeforeWarmStartsTrainsFromZeroAndReplaysEqual() async throws {
        let fixture = try await PipelineFixture.make()
        let (_, run) = try await Self.secondNight(fixture)
        // As `enqueue` planned it before `train.init` existed: neither field in the step inputs.
        let db = try Database(path: fixture.directory.state.database.path, durability: .normal)
        #expect(try db.run("UPDATE jobs SET input = json_remove(input, '$.train_init') WHERE kind = 'sample' AND state <> 'succeeded'") == 1)
        #expect(try db.run("UPDATE jobs SET input = json_remove(input, '$.init') WHERE kind = 'train' AND state <> 'succeeded'") == 1)
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let outputs = try fixture.outputs(run)
        #expect(outputs["sample"]?["weights_parent"] == nil)
        #expect(outputs["train"]?["init"] == nil && outputs["train"]?["inputs"]?["weights_parent"] == nil)
        let replay = try await fixture.adapt(["replay", run, "--check", "--json"])
        #expect(replay.status == 0, "\(replay.stdout) \(replay.stderr)")
    }

    @Test func aNightWhoseStepsNeverBeatTheParentKeepsItAndPromotesNothing() async throws {
        let fixture = try await PipelineFixture.make()
        // Night 2 measures v1's weights first, then takes steps far too large to improve on them.
        let harsh = fixture.directory.file("harsh.json")
        try Data("""
            {"seed": 7, "train": {"steps": 8, "batch_size": 2, "warmup_steps": 0, "max_length": 96, "schedule": "constant",
                                  "early_stopping": {"every_steps": 1, "patience": 1}, "learning_rate": 0.5},
             "device": {"min_available_memory_mb": 64}}
            """.utf8).write(to: harsh)
        let first = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let night1 = try fixture.outputs(first)
        try #require(night1["promote"]?["promoted"]?.boolValue == true, "the first night must promote for this test")
        let result = try await fixture.adapt(["enqueue", "nightly", "--lineage", "logbook", "--pipeline", harsh.path,
                                              "--model", "tiny.gguf", "--night", "2026-12-01", "--json"])
        try fixture.expectSuccess(result)
        let run = try #require(try JSON.decode(JSONValue.self, from: result.stdout, context: "enqueue")["run_id"]?.stringValue)
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let outputs = try fixture.outputs(run)
        let train = try #require(outputs["train"])
        #expect(train["init"]?["from"] == .string("logbook/v1"))
        #expect(train["validation_losses"]?.arrayValue?.first?["step"] == .int(0))
        #expect(train["best_step"] == .int(0) && train["kept_parent"] == .bool(true))
        #expect(outputs["promote"]?["promoted"] == .bool(false) && outputs["promote"]?["reason"] == .string("kept_parent"))
        // Nothing registered, v1 still active, and the night replays equal.
        let versions = try await Self.registry(fixture)
        #expect(versions.count == 1 && versions.first?["active"] == .bool(true))
        let replay = try await fixture.adapt(["replay", run, "--check", "--json"])
        #expect(replay.status == 0, "\(replay.stdout) \(replay.stderr)")
    }
}
