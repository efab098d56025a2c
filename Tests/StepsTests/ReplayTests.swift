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
        // Replaced by hand: adapt itself refuses to write over a model in the state's models/.
        let other = fixture.directory.file("other.gguf")
        try fixture.expectSuccess(await fixture.adapt(["model", "tiny", "--seed", "1", "--out", other.path]))
        try FileManager.default.removeItem(at: model)
        try FileManager.default.moveItem(at: other, to: model)
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

    /// A step's input edited after it ran (here in the job table, as a stale or hand-edited row would be): replay
    /// names the input field with the value the step ran with and the one it would replay with, before it
    /// runs the step, so no output digest is reported instead.
    @Test func aChangedLearningRateSeedOrStepCountIsNamedBeforeAnyOutput() async throws {
        let fixture = try await PipelineFixture.make()
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let queue = try fixture.queue()
        let cases: [(field: String, recorded: JSONValue, changed: String, replayed: JSONValue)] = [
            ("learning_rate", .double(0.01), "0.02", .double(0.02)),
            ("seed", .int(7), "8", .int(8)),
            ("steps", .int(16), "17", .int(17)),
        ]
        for change in cases {
            let original = JSON.canonicalString(change.recorded)
            try queue.database.run("UPDATE jobs SET input = json_set(input, '$.\(change.field)', json('\(change.changed)')) WHERE name = 'train'")
            let (status, report) = try await replay(fixture, run)
            #expect(status == 1, "\(change.field)")
            let difference = try #require(report["first_difference"])
            #expect(difference["step"]?.stringValue == "train")
            #expect(difference["field"]?.stringValue == "input.\(change.field)")
            #expect(difference["expected"] == change.recorded, "\(change.field)")
            #expect(difference["actual"] == change.replayed, "\(change.field)")
            #expect(report["steps"]?.arrayValue?.map { $0["name"]?.stringValue ?? "" } == ["prune", "sample", "train"])

            let human = try await fixture.adapt(["replay", run, "--check"])
            #expect(human.status == 1)
            #expect(human.stdout.contains("differs at train.input.\(change.field): \(original) → \(change.changed)"), "\(human.stdout)")
            try queue.database.run("UPDATE jobs SET input = json_set(input, '$.\(change.field)', json('\(original)')) WHERE name = 'train'")
        }
        // Restored, the run replays equal again: the check compares values, not the act of editing.
        let (status, report) = try await replay(fixture, run)
        #expect(status == 0)
        #expect(report["equal"]?.boolValue == true)
    }

    /// Without `--scratch`, replay works in a private directory inside the state directory and removes it; a
    /// replay killed mid-way leaves its scratch, and the next replay removes it. Nothing goes to the system
    /// temporary directory.
    /// A replay of `run` killed with SIGKILL once its scratch database exists; returns the scratch left behind.
    private func killReplayMidway(_ fixture: PipelineFixture, run: String, environment: [String: String]) async throws -> String {
        let killed = try Executables.start("adapt", ["--state", fixture.statePath, "replay", run, "--check"],
                                           environment: environment, outputIn: fixture.directory.url)
        let deadline = ContinuousClock.now + .seconds(60)
        var name: String?
        // Mid-way: the scratch exists and its database has been written (the snapshot is being restored or a
        // step is replaying).
        while ContinuousClock.now < deadline, killed.isRunning {
            if let first = Self.scratchDirectories(fixture).first,
               FileManager.default.fileExists(atPath: Self.scratch(fixture).appendingPathComponent(first).appendingPathComponent("adapt.sqlite").path) {
                name = first
                break
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        let left = try #require(name, "replay never created its scratch: \(killed.stderr)")
        #expect(left.hasPrefix("replay-\(killed.pid)-"))
        killed.send(SIGKILL)
        #expect(await killed.exited() != 0)
        #expect(Self.scratchDirectories(fixture) == [left], "a killed replay cannot clean up after itself")
        return left
    }

    private static func scratch(_ fixture: PipelineFixture) -> URL {
        fixture.directory.state.root.appendingPathComponent("scratch")
    }

    private static func scratchDirectories(_ fixture: PipelineFixture) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: scratch(fixture).path)) ?? []).filter { $0.hasPrefix("replay-") }.sorted()
    }

    @Test func replayScratchIsPrivateInsideTheStateAndAKilledReplaysScratchIsRemovedByTheNext() async throws {
        let fixture = try await PipelineFixture.make()
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let temporary = fixture.directory.file("tmp")
        try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: true)
        let environment = ["TMPDIR": temporary.path]
        let left = try await killReplayMidway(fixture, run: run, environment: environment)
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: Self.scratch(fixture).appendingPathComponent(left).path)[.posixPermissions] as? Int)
        #expect(mode & 0o777 == 0o700)

        let next = try await fixture.adapt(["replay", run, "--check", "--json"], environment: environment)
        #expect(next.status == 0, "\(next.stderr)")
        #expect(Self.scratchDirectories(fixture).isEmpty, "the killed replay's scratch and the finished one's are both gone")
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary.path).isEmpty)
    }

    @Test func forgettingAnExampleRemovesTheScratchAKilledReplayLeftWithItsText() async throws {
        let fixture = try await PipelineFixture.make()
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        _ = try await killReplayMidway(fixture, run: run, environment: [:])
        let listed = try await fixture.adapt(["data", "list", "--lineage", "logbook", "--json"])
        let id = try #require(try JSON.decode(JSONValue.self, from: listed.stdout, context: "data list").arrayValue?.first?["id"]?.stringValue)
        let forget = try await fixture.adapt(["data", "forget", "--id", id, "--json"])
        #expect(forget.status == 0, "\(forget.stderr)")
        #expect(try JSON.decode(JSONValue.self, from: forget.stdout, context: "forget")["removed_replay_scratch"] == .int(1))
        #expect(Self.scratchDirectories(fixture).isEmpty)
    }
}
