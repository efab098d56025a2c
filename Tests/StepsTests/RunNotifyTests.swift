import AdaptCore
import Foundation
import Testing
import TestSupport

/// A pipeline's `notify` command hears how each run ended, on stdin, from `adapt work`; stdout (the journal under
/// the systemd timer) gets the same outcome.
@Suite(.serialized) struct RunNotifyTests {
    /// The small test pipeline with `notify` writing its stdin to `file` (appending, so a second call shows).
    static func pipeline(notifyingInto file: URL, extra: String = "") -> String {
        pipeline(notify: ["/bin/sh", "-c", "cat >> '\(file.path)'"], extra: extra)
    }

    static func pipeline(notify command: [String], extra: String = "") -> String {
        let base = PipelineFixture.pipeline(maxAttempts: 1)
        let notify = #""notify": "# + JSON.canonicalString(JSONValue.array(command.map(JSONValue.string))) + ", "
        return "{" + notify + extra + base.drop { $0 != "{" }.dropFirst()
    }

    func outcomes(_ file: URL) throws -> [JSONValue] {
        try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map {
            try JSON.decode(JSONValue.self, from: String($0), context: "notify stdin")
        }
    }

    @Test func notifyHearsASucceededRunOnceWithItsGateAndVersion() async throws {
        let directory = TemporaryDirectory("adapt-notify")
        let heard = directory.file("heard.jsonl")
        let fixture = try await PipelineFixture.make(pipeline: Self.pipeline(notifyingInto: heard))
        let run = try await fixture.enqueue()
        let result = try await fixture.adapt(["work", "--exit-when-idle"])
        try fixture.expectSuccess(result)
        let told = try outcomes(heard)
        #expect(told.count == 1)
        let outcome = try #require(told.first)
        #expect(outcome["run_id"]?.stringValue == run)
        #expect(outcome["lineage"]?.stringValue == "logbook" && outcome["night"]?.stringValue == fixture.night)
        #expect(outcome["state"]?.stringValue == "succeeded")
        let result_ = outcome["result"]?.stringValue
        #expect(result_ == "promoted" || result_ == "refused")
        #expect(outcome["gate"]?["compared_with"]?.stringValue == "base")
        #expect(outcome["gate"]?["outcome"]?.stringValue != nil)
        #expect(outcome["version"]?.stringValue == "logbook/v1")
        #expect(outcome["failed_step"] == .null)
        #expect(outcome["report"]?.stringValue == "adapt report \(run)")
        // The same outcome on stdout, where the systemd unit's journal reads it.
        #expect(result.stdout.contains("run ended: \(run) logbook/\(fixture.night): "))
        #expect(result.stderr.contains("\(run): told /bin/sh"))

        // A later `adapt work` does not announce a run that ended before it started.
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        #expect(try outcomes(heard).count == 1)
    }

    @Test func notifyHearsAFailedRunWithTheStepThatFailed() async throws {
        let directory = TemporaryDirectory("adapt-notify")
        let heard = directory.file("heard.jsonl")
        let fixture = try await PipelineFixture.make(pipeline: Self.pipeline(notifyingInto: heard))
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle", "--workers", "prune,sample"]))
        try FileManager.default.removeItem(at: fixture.directory.state.models.appendingPathComponent("tiny.gguf"))
        let result = try await fixture.adapt(["work", "--exit-when-idle"])
        try fixture.expectSuccess(result)
        let outcome = try #require(try outcomes(heard).first)
        #expect(outcome["run_id"]?.stringValue == run)
        #expect(outcome["state"]?.stringValue == "failed" && outcome["result"]?.stringValue == "failed")
        #expect(outcome["failed_step"]?["name"]?.stringValue == "train")
        #expect(outcome["failed_step"]?["state"]?.stringValue == "discarded")
        #expect(outcome["gate"] == .null)
        #expect(result.stdout.contains("\(run) logbook/\(fixture.night): failed at train (discarded)"))
    }

    /// A significance level no held-out set of this size can reach: the gate says not enough evidence.
    @Test func notifyHearsANightTheGateRefused() async throws {
        let directory = TemporaryDirectory("adapt-notify")
        let heard = directory.file("heard.jsonl")
        let fixture = try await PipelineFixture.make(pipeline: Self.pipeline(notifyingInto: heard, extra: #""eval": {"alpha": 1e-12}, "#))
        _ = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let outcome = try #require(try outcomes(heard).first)
        #expect(outcome["result"]?.stringValue == "refused")
        #expect(outcome["gate"]?["outcome"]?.stringValue == "not_enough_evidence")
    }

    @Test func aFailingNotifyCommandIsAWarningNotAFailure() async throws {
        let base = PipelineFixture.pipeline()
        let pipeline = "{" + #""notify": ["/bin/sh", "-c", "exit 3"], "# + base.drop { $0 != "{" }.dropFirst()
        let fixture = try await PipelineFixture.make(pipeline: pipeline)
        _ = try await fixture.enqueue()
        let result = try await fixture.adapt(["work", "--exit-when-idle"])
        try fixture.expectSuccess(result)
        #expect(result.stderr.contains("notify command /bin/sh failed: exit status 3"))
    }

    @Test func aNotifyFieldThatIsNotACommandIsRefusedByName() async throws {
        let base = PipelineFixture.pipeline()
        let fixture = try await PipelineFixture.make(pipeline: "{" + #""notify": "mail me", "# + base.drop { $0 != "{" }.dropFirst())
        let result = try await fixture.adapt(["enqueue", "nightly", "--lineage", "logbook", "--pipeline", fixture.pipelinePath,
                                              "--model", "tiny.gguf", "--night", fixture.night])
        #expect(result.status != 0)
        #expect(result.stderr.contains("notify must be null or an array of strings"))
    }
}
