import AdaptCore
import Foundation
import JobQueue
import Testing
import TestSupport

/// Erasure and expiry reach every byte (issue 16): after `data forget` or TTL expiry, none of the erased
/// examples' text is left in any file under the state directory (database, WAL, blobs, compressed
/// checkpoints), runs that read an erased snapshot say so, and adapters trained on it are listed and retired.
@Suite(.serialized) struct ErasureTests {
    /// A short pipeline: erasure does not depend on how long training runs.
    static let pipeline = PipelineFixture.pipeline(steps: 8, checkpointInterval: 2)

    /// Examples of the lineage, from `data list --json`.
    func examples(_ fixture: PipelineFixture) async throws -> [JSONValue] {
        let list = try await fixture.adapt(["data", "list", "--json"])
        try fixture.expectSuccess(list)
        return try #require(try JSON.decode(JSONValue.self, from: list.stdout, context: "data list").arrayValue)
    }

    /// Three training examples the run's sample step put in its training snapshot.
    func sampledExamples(_ fixture: PipelineFixture, run: String, count: Int = 3) async throws -> [JSONValue] {
        let snapshot = try #require(try fixture.outputs(run)["sample"]?["train_snapshot"]?.stringValue.flatMap(Digest.init(hex:)))
        let data = try fixture.directory.state.blobs.get(snapshot)
        let sampledIDs = Set(data.split(separator: 0x0A).compactMap {
            (try? JSON.decode(JSONValue.self, from: Data($0), context: "snapshot line"))?["id"]?.stringValue
        })
        let chosen = try await examples(fixture).filter { sampledIDs.contains($0["id"]?.stringValue ?? "") }.prefix(count)
        #expect(chosen.count == count)
        return Array(chosen)
    }

    /// Needles for the prompt and completion of `erased`, with fragments no kept example shares.
    func needles(_ erased: [JSONValue], kept: [JSONValue]) -> [PrivacyScan.Needle] {
        let others = kept.flatMap { [$0["prompt"]?.stringValue ?? "", $0["completion"]?.stringValue ?? ""] }
        let texts = erased.enumerated().flatMap { index, example in
            [("example \(index) prompt", example["prompt"]?.stringValue ?? ""),
             ("example \(index) completion", example["completion"]?.stringValue ?? "")]
        }
        return PrivacyScan.needles(texts, others: others)
    }

    @Test func forgettingThreeExamplesLeavesNoneOfTheirTextInAnyFileAndRetiresTheirAdapters() async throws {
        let fixture = try await PipelineFixture.make(pipeline: Self.pipeline)
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        #expect(try fixture.queue().run(try #require(RunID.parse(run))).counts[.succeeded] == 5)

        let chosen = try await sampledExamples(fixture, run: run)
        let ids = chosen.compactMap { $0["id"]?.stringValue }
        let kept = try await examples(fixture).filter { !ids.contains($0["id"]?.stringValue ?? "") }
        let needles = needles(chosen, kept: kept)
        // The scan finds the text before erasure: in the buffer snapshot, the training snapshot, the database.
        let before = PrivacyScan.hits(needles, under: fixture.directory.state.root)
        #expect(before.contains { $0.contains("/blobs/") }, "the scan found no copy in a blob before erasure: \(before)")
        // The scan reads inside compressed files too: the train step's checkpoints are zstd frames.
        #expect(PrivacyScan.files(under: fixture.directory.state.root).contains {
            !PrivacyScan.zstdFrames(in: FileManager.default.contents(atPath: $0) ?? Data()).isEmpty
        }, "no zstd frame was found to look inside")

        let forget = try await fixture.adapt(["data", "forget", "--json", "--retire-adapters"] + ids.flatMap { ["--id", $0] })
        try fixture.expectSuccess(forget)
        let report = try JSON.decode(JSONValue.self, from: forget.stdout, context: "forget")
        #expect(report["forgotten"]?.intValue == 3)
        // The prune step's buffer snapshot and the sample step's training snapshot held them.
        #expect((report["erased_blobs"]?.intValue ?? 0) >= 2, "\(forget.stdout)")
        #expect(report["wal_truncated"]?.boolValue == true)
        let versions = try #require(report["adapter_versions"]?.arrayValue)
        #expect(versions.count == 1 && versions.first?["retired"]?.boolValue == true, "\(forget.stdout)")
        #expect(!forget.stdout.contains(chosen[0]["prompt"]?.stringValue ?? "∅"), "the report printed text")

        let after = PrivacyScan.hits(needles, under: fixture.directory.state.root)
        #expect(after.isEmpty, "erased text is still on disk: \(after)")

        // The registry keeps the version's file but it can never be made active again.
        let list = try JSON.decode(JSONValue.self, from: try await fixture.adapt(["registry", "list", "--json"]).stdout, context: "list")
        let version = try #require(list.arrayValue?.first)
        #expect(version["retired"]?.boolValue == true && version["active"]?.boolValue == false)
        let promote = try await fixture.adapt(["registry", "promote", "logbook/v1", "--force"])
        #expect(promote.status == 1 && promote.stderr.contains("retired"), "\(promote.stderr)")

        // The run says its inputs were erased, as a person and as JSON; replay refuses with exit 2.
        let show = try await fixture.adapt(["show", run])
        #expect(show.stdout.contains("at the user's request"), "\(show.stdout)")
        let showJSON = try JSON.decode(JSONValue.self, from: try await fixture.adapt(["show", run, "--json"]).stdout, context: "show")
        let erased = try #require(showJSON["erased_inputs"]?.arrayValue)
        #expect(erased.contains { $0["field"]?.stringValue == "inputs.buffer_snapshot" && $0["reason"]?.stringValue == "forget" })
        let replay = try await fixture.adapt(["replay", run, "--check", "--json"])
        #expect(replay.status == 2, "\(replay.stderr)")
        #expect(replay.stderr.contains("erased") && !replay.stderr.contains("not in the blob store"), "\(replay.stderr)")
        let replayJSON = try JSON.decode(JSONValue.self, from: replay.stdout, context: "replay")
        #expect(replayJSON["replayable"]?.boolValue == false && replayJSON["equal"]?.boolValue == false)

        // What was not erased is still usable: the kept examples are all listed.
        #expect(try await examples(fixture).count == kept.count)
    }

    @Test func aRunStillGoingWhenItsSnapshotIsErasedStopsWithThatReasonNotAMissingBlob() async throws {
        let fixture = try await PipelineFixture.make(pipeline: Self.pipeline)
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle", "--workers", "prune,sample"]))
        let ids = try await sampledExamples(fixture, run: run, count: 1).compactMap { $0["id"]?.stringValue }
        try fixture.expectSuccess(await fixture.adapt(["data", "forget", "--id", ids[0]]))

        _ = try await fixture.adapt(["work", "--exit-when-idle", "--workers", "train"])
        let train = try #require(try fixture.queue().jobs(matching: .init(run: RunID.parse(run), kind: "train")).first)
        #expect(train.state == .discarded && train.attempt == 1, "\(train.state), attempt \(train.attempt)")
        #expect(train.error?.contains("input erased on") == true && train.error?.contains("at the user's request") == true,
                "\(train.error ?? "no error")")
    }

    @Test func aCandidateTrainedOnTextErasedBeforeItsPromoteIsNeverRegistered() async throws {
        let fixture = try await PipelineFixture.make(pipeline: Self.pipeline)
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle", "--workers", "prune,sample,train,eval"]))
        let ids = try await sampledExamples(fixture, run: run, count: 1).compactMap { $0["id"]?.stringValue }
        let forget = try await fixture.adapt(["data", "forget", "--id", ids[0], "--json"])
        try fixture.expectSuccess(forget)
        #expect(try JSON.decode(JSONValue.self, from: forget.stdout, context: "forget")["adapter_versions"] == .array([]))

        _ = try await fixture.adapt(["work", "--exit-when-idle", "--workers", "promote"])
        let promote = try #require(try fixture.queue().jobs(matching: .init(run: RunID.parse(run), kind: "promote")).first)
        #expect(promote.state == .discarded && promote.error?.contains("at the user's request") == true, "\(promote.error ?? "")")
        let list = try await fixture.adapt(["registry", "list", "--json"])
        #expect(try JSON.decode(JSONValue.self, from: list.stdout, context: "registry list") == .array([]))
    }

    @Test func ttlExpiryRemovesEveryCopyOfTheExpiredTextAndTheRunSaysItExpired() async throws {
        let fixture = try await PipelineFixture.make(pipeline: Self.pipeline)
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle", "--workers", "prune,sample"]))
        let all = try await examples(fixture)
        let training = all.filter { $0["split"]?.stringValue == "train" }
        let heldOut = all.filter { $0["split"]?.stringValue == "held_out" }
        #expect(!training.isEmpty && !heldOut.isEmpty)
        let needles = needles(training, kept: heldOut)
        #expect(!PrivacyScan.hits(needles, under: fixture.directory.state.root).isEmpty)

        // A month and a half later (the pipeline's TTL is 30 days): the next night's prune expires every
        // training example. The steps read the shifted clock; the job engine keeps the real one.
        let later = try await fixture.adapt(["enqueue", "nightly", "--lineage", "logbook", "--pipeline", fixture.pipelinePath,
                                             "--model", "tiny.gguf", "--night", "2027-01-15", "--json"])
        try fixture.expectSuccess(later)
        let work = try await fixture.adapt(["work", "--exit-when-idle", "--workers", "prune"],
                                           environment: [OffsetClock.variable: String(45 * 86_400_000)])
        try fixture.expectSuccess(work)
        let laterRun = try #require(try JSON.decode(JSONValue.self, from: later.stdout, context: "enqueue")["run_id"]?.stringValue)
        let prune = try #require(try fixture.outputs(laterRun)["prune"])
        #expect(prune["deleted"]?.intValue == training.count)
        #expect((prune["timing"]?["erased_blobs"]?.intValue ?? 0) >= 3, "\(prune)")

        let after = PrivacyScan.hits(needles, under: fixture.directory.state.root)
        #expect(after.isEmpty, "expired text is still on disk: \(after)")
        #expect(try await examples(fixture).count == heldOut.count, "held-out examples do not expire")
        let show = try await fixture.adapt(["show", run])
        #expect(show.stdout.contains("expired on"), "\(show.stdout)")
    }

    @Test func forgetOnAFullDiskSaysSpaceMustBeFreedAndErasesNothing() async throws {
        let fixture = try await PipelineFixture.make(importData: false)
        // One long example: erasing it rewrites (secure_delete) about 200 pages, more than the limit below.
        let long = String(repeating: "a private note that must be erased on request ", count: 4000)
        let file = fixture.directory.file("long.jsonl")
        try Data("{\"prompt\": \"p\", \"completion\": \"\(long)\"}\n".utf8).write(to: file)
        try fixture.expectSuccess(await fixture.adapt(["data", "import", file.path, "--lineage", "notes"]))
        let id = try #require(try await examples(fixture).first?["id"]?.stringValue)

        // No root for a small tmpfs: the file-size limit (RLIMIT_FSIZE, 64 blocks of 512 bytes) makes every
        // write past 32 KB fail the way a full disk does, for this process only.
        let result = try await adaptUnderShell("ulimit -f 64", ["--state", fixture.statePath, "data", "forget", "--id", id])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("no space left") && result.stderr.contains("nothing was erased")
                && result.stderr.contains("Free some space"), "\(result.stderr)")
        #expect(!result.stderr.contains("SQLite error"), "\(result.stderr)")
        #expect(try await examples(fixture).count == 1, "the failed erasure changed the buffer")
        // With room again the same command erases it.
        try fixture.expectSuccess(await fixture.adapt(["data", "forget", "--id", id]))
        #expect(try await examples(fixture).isEmpty)
    }
}
