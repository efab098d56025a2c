import AdaptCore
import Foundation
import Testing
import TestSupport

/// A replay scratch kept with `adapt replay RUN --scratch DIR` holds a copy of the run's replay buffer outside the
/// state: `data forget` removes it when it holds a forgotten example, and names one it cannot reach any more.
@Suite(.serialized) struct KeptReplayScratchErasureTests {
    @Test func forgetRemovesAKeptScratchHoldingTheExampleAndNamesOneThatWasMoved() async throws {
        let fixture = try await PipelineFixture.make(pipeline: ErasureTests.pipeline)
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let kept = fixture.directory.file("kept-replay"), movedFrom = fixture.directory.file("second-replay")
        let movedTo = fixture.directory.file("moved-replay")
        for scratch in [kept, movedFrom] {
            try fixture.expectSuccess(await fixture.adapt(["replay", run, "--check", "--scratch", scratch.path]))
        }
        try FileManager.default.moveItem(at: movedFrom, to: movedTo)

        let erasure = ErasureTests()
        let chosen = try await erasure.sampledExamples(fixture, run: run, count: 1)
        let id = try #require(chosen.first?["id"]?.stringValue)
        let others = try await erasure.examples(fixture).filter { $0["id"]?.stringValue != id }
        let needles = erasure.needles(chosen, kept: others)
        #expect(!PrivacyScan.hits(needles, under: kept).isEmpty, "the scan found no copy in the kept scratch before erasure")

        let forget = try await fixture.adapt(["data", "forget", "--id", id, "--json"])
        try fixture.expectSuccess(forget)
        let report = try JSON.decode(JSONValue.self, from: forget.stdout, context: "forget")
        let outcomes = try #require(report["kept_replay_scratch"]?.arrayValue, "\(forget.stdout)")
        func action(_ url: URL) -> String? {
            outcomes.first { $0["path"]?.stringValue == url.standardizedFileURL.path }?["action"]?.stringValue
        }
        #expect(action(kept) == "removed", "\(forget.stdout)")
        #expect(action(movedFrom) == "not_found", "\(forget.stdout)")
        #expect(outcomes.allSatisfy { $0["run_id"]?.stringValue == run }, "\(forget.stdout)")
        #expect(PrivacyScan.hits(needles, under: kept).isEmpty && !FileManager.default.fileExists(atPath: kept.path),
                "the kept scratch still holds the forgotten text")

        // Named once: the next erasure has nothing more to say about either.
        let other = try #require(others.first?["id"]?.stringValue)
        let again = try await fixture.adapt(["data", "forget", "--id", other])
        try fixture.expectSuccess(again)
        #expect(!again.stdout.contains("replay scratch"), "\(again.stdout)")
    }

    @Test func expiryRemovesAKeptScratchHoldingExpiredText() async throws {
        let fixture = try await PipelineFixture.make(pipeline: ErasureTests.pipeline)
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let kept = fixture.directory.file("kept-replay")
        try fixture.expectSuccess(await fixture.adapt(["replay", run, "--check", "--scratch", kept.path]))
        let all = try await ErasureTests().examples(fixture)
        let training = all.filter { $0["split"]?.stringValue == "train" }
        let needles = ErasureTests().needles(training, kept: all.filter { $0["split"]?.stringValue == "held_out" })
        #expect(!PrivacyScan.hits(needles, under: kept).isEmpty, "the scan found no copy in the kept scratch before expiry")

        // A month and a half later (the pipeline's TTL is 30 days) the next night's prune expires every training example.
        let later = try await fixture.adapt(["enqueue", "nightly", "--lineage", "logbook", "--pipeline", fixture.pipelinePath,
                                             "--model", "tiny.gguf", "--night", "2027-01-15", "--json"])
        try fixture.expectSuccess(later)
        let prune = try await fixture.adapt(["work", "--exit-when-idle", "--workers", "prune"],
                                            environment: [OffsetClock.variable: String(45 * 86_400_000)])
        try fixture.expectSuccess(prune)
        #expect(prune.stderr.contains("removed the replay scratch kept at \(kept.standardizedFileURL.path)"), "\(prune.stderr)")
        #expect(PrivacyScan.hits(needles, under: kept).isEmpty && !FileManager.default.fileExists(atPath: kept.path),
                "the kept scratch still holds the expired text")
    }
}
