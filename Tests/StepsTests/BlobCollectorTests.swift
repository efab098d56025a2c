import AdaptCore
import Foundation
import JobQueue
import Testing
import TestSupport

/// `adapt gc` (issue 16): blobs have owners; what nothing owns is deleted, and nothing a run, a version or a
/// checkpoint still needs ever is.
@Suite(.serialized, .timeLimit(.minutes(10))) struct BlobCollectorTests {
    static let pipeline = PipelineFixture.pipeline(steps: 8, checkpointInterval: 2)

    func gc(_ fixture: PipelineFixture, _ extra: [String] = []) async throws -> JSONValue {
        let result = try await fixture.adapt(["gc", "--json"] + extra)
        try fixture.expectSuccess(result)
        return try JSON.decode(JSONValue.self, from: result.stdout, context: "gc")
    }

    @Test func gcDeletesWhatNothingOwnsAndKeepsWhatRunsAndVersionsNeed() async throws {
        let fixture = try await PipelineFixture.make(pipeline: Self.pipeline)
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let blobs = fixture.directory.state.blobs
        // A blob nothing names, written an hour ago (a step that crashed before recording it).
        let orphan = try blobs.put(Data("written by a step that never completed".utf8))
        var old = [timespec(tv_sec: time(nil) - 3600, tv_nsec: 0), timespec(tv_sec: time(nil) - 3600, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, blobs.url(for: orphan).path, &old, 0) == 0)
        // One just written is kept: a running step may be about to record it.
        let young = try blobs.put(Data("just stored by a running step".utf8))
        let stored = blobs.all().count

        let dry = try await gc(fixture, ["--dry-run"])
        #expect(dry["deleted_blobs"]?.intValue == 1 && blobs.all().count == stored, "\(dry)")
        let report = try await gc(fixture)
        #expect(report["deleted_blobs"]?.intValue == 1 && report["kept_blobs"]?.intValue == stored - 1, "\(report)")
        // The young blob, and the finished train step's checkpoints (owned by nothing once it completed).
        #expect((report["kept_recent"]?.intValue ?? 0) >= 1)
        #expect(!blobs.contains(orphan) && blobs.contains(young))
        // Everything the run read and wrote is still there: its replay is equal.
        let replay = try await fixture.adapt(["replay", run, "--check"])
        #expect(replay.status == 0, "\(replay.stdout)\(replay.stderr)")

        // Once the run is pruned from history only the registered adapter is owned.
        let pruned = try await fixture.adapt(["prune-history", "--older-than", "0", "--json"])
        try fixture.expectSuccess(pruned)
        #expect(pruned.stderr.contains("gc: deleted") && pruned.stderr.contains("younger than"), "prune-history ran no gc: \(pruned.stderr)")
        let all = try await gc(fixture, ["--min-age", "0"])
        #expect(all["kept_blobs"]?.intValue == 1, "\(all)")
        try fixture.expectSuccess(await fixture.adapt(["registry", "verify"]))
    }

    @Test func gcOnAStateWithoutJobsDeletesOnlyOldUnownedBlobs() async throws {
        let fixture = try await PipelineFixture.make(importData: false)
        // A database with no runs: without one gc refuses, since nothing would tell what is owned.
        _ = try fixture.queue()
        let blobs = fixture.directory.state.blobs
        let orphan = try blobs.put(Data("nothing names this".utf8))
        var old = [timespec(tv_sec: time(nil) - 3600, tv_nsec: 0), timespec(tv_sec: time(nil) - 3600, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, blobs.url(for: orphan).path, &old, 0) == 0)
        let report = try await gc(fixture)
        #expect(report["deleted_blobs"]?.intValue == 1 && report["kept_blobs"]?.intValue == 0, "\(report)")
        #expect(report["freed_bytes"]?.intValue == 18)
    }

    @Test func aRunWithGCRunningBesideItAndWorkersKilledEndsWithTheSameAdapter() async throws {
        let pipeline = PipelineFixture.pipeline(steps: 200, checkpointInterval: 5, maxAttempts: 30)
        let calm = try await PipelineFixture.make(pipeline: pipeline)
        let calmRun = try await calm.enqueue()
        try calm.expectSuccess(await calm.adapt(["work", "--exit-when-idle"]))
        let expected = try #require(try calm.outputs(calmRun)["train"]?["adapter_digest"])

        let fixture = try await PipelineFixture.make(pipeline: pipeline)
        let run = try await fixture.enqueue()
        let supervisor = try Executables.start("adapt", ["--state", fixture.statePath, "work", "--exit-when-idle", "--lease-ms", "1000"],
                                               outputIn: fixture.directory.url)
        let queue = try fixture.queue()
        let deadline = Date().addingTimeInterval(240)
        var collections = 0, deleted = 0, kills = 0
        while supervisor.isRunning, Date() < deadline {
            // A grace of 3 s: far longer than a step takes to record a blob it stored, far shorter than a run.
            let report = try await gc(fixture, ["--min-age", "3"])
            collections += 1
            deleted += report["deleted_blobs"]?.intValue ?? 0
            // Kill the train worker after its first checkpoint, and again three checkpoints (15 steps) later: it
            // resumes from the pointer gc must keep.
            if kills < 2, let train = try queue.jobs(matching: .init(run: RunID.parse(run), kind: "train")).first, train.state == .running,
               (try queue.checkpointPointer(job: train.id)?.arrayValue?.first?["step"]?.intValue ?? 0) > kills * 15,
               let pid = train.leaseOwner?.split(separator: "/").last.flatMap({ Int32($0) }) {
                kill(pid, SIGKILL)
                kills += 1
            }
            try await Task.sleep(for: .seconds(0.2))
        }
        #expect(try await blocking { supervisor.wait() } == 0, "\(supervisor.stderr)")
        #expect(collections >= 3 && kills >= 1, "\(collections) collections, \(kills) kills")
        let outputs = try fixture.outputs(run)
        #expect(outputs["train"]?["adapter_digest"] == expected, "gc beside the run changed its adapter")
        #expect(try queue.run(try #require(RunID.parse(run))).counts[.succeeded] == 5)
        let replay = try await fixture.adapt(["replay", run, "--check"])
        #expect(replay.status == 0, "\(replay.stdout)\(replay.stderr)")
    }

    @Test func theStateStaysBoundedOverThirtyNights() async throws {
        // Enough budget (lineage and pipeline) for every night to train and register a candidate: the worst
        // case for growth.
        let pipeline = PipelineFixture.pipeline(steps: 2, checkpointInterval: 1)
            .replacingOccurrences(of: "{\"seed\": 7,", with: "{\"seed\": 7, \"privacy\": {\"max_uses_per_example\": 1000},")
        let fixture = try await PipelineFixture.make(pipeline: pipeline)
        try fixture.expectSuccess(await fixture.adapt(["data", "policy", "--lineage", "logbook", "--max-uses", "1000"]))
        var sizes: [Int] = []
        let first = Int64(1_793_491_200_000)  // 2026-11-01
        for night in 0..<30 {
            let date = String(Timestamp.iso8601(first + Int64(night) * 86_400_000).prefix(10))
            try fixture.expectSuccess(await fixture.adapt(["enqueue", "nightly", "--lineage", "logbook", "--pipeline", fixture.pipelinePath,
                                                           "--model", "tiny.gguf", "--night", date]))
            _ = try await fixture.adapt(["work", "--exit-when-idle"])
            try fixture.expectSuccess(await fixture.adapt(["prune-history", "--older-than", "0", "--keep-versions", "3"]))
            _ = try await gc(fixture, ["--min-age", "0"])
            sizes.append(PrivacyScan.size(of: fixture.directory.state.root))
        }
        let versions = try JSON.decode(JSONValue.self, from: try await fixture.adapt(["registry", "list", "--json"]).stdout,
                                       context: "registry list").arrayValue ?? []
        let adapterBytes = versions.compactMap { $0["size"]?.intValue }.max() ?? 0
        #expect(versions.count == 30, "not every night registered a candidate")
        let root = fixture.directory.state.root
        let blobBytes = PrivacyScan.size(of: root.appendingPathComponent("blobs"))
        let databaseBytes = PrivacyScan.size(of: root.appendingPathComponent("adapt.sqlite"))
        let kept = versions.filter { $0["pruned"]?.boolValue != true }
        print("state size over 30 nights (bytes): \(sizes); adapter \(adapterBytes) bytes, \(versions.count) versions, "
              + "\(kept.count) with their file; at the end: blobs \(blobBytes), database \(databaseBytes)")
        // What may grow: the adapters the registry keeps and the database (registry rows, score-cache rows, the
        // privacy-budget ledger, which expires with its examples). Snapshots, checkpoints and pruned runs' blobs
        // must not accumulate: the blob store holds exactly the kept adapters. `--keep-versions 3` keeps the newest
        // three files, the active version's and those of the versions its parent and trained_from links reach.
        let keptBytes = kept.compactMap { $0["size"]?.intValue }.reduce(0, +)
        #expect(blobBytes == keptBytes, "blobs hold \(blobBytes) bytes, the kept adapters \(keptBytes)")
        let byName = Dictionary(uniqueKeysWithValues: versions.compactMap { v in v["version"]?.stringValue.map { ($0, v) } })
        var expected = Set(versions.suffix(3).compactMap { $0["version"]?.stringValue })
        var waiting = versions.filter { $0["active"]?.boolValue == true }.compactMap { $0["version"]?.stringValue }
        var walked = Set<String>()
        while let name = waiting.popLast() {
            guard walked.insert(name).inserted else { continue }
            expected.insert(name)
            waiting += [byName[name]?["parent"]?.stringValue, byName[name]?["trained_from"]?.stringValue].compactMap { $0 }
        }
        #expect(Set(kept.compactMap { $0["version"]?.stringValue }) == expected)
        let otherGrowth = (sizes[29] - sizes[4]) - kept.count * adapterBytes
        #expect(otherGrowth <= 25 * 32_768, "besides adapters the state grew \(otherGrowth) bytes in 25 nights: \(sizes)")
    }
}
