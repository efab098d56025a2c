import AdaptCore
import Foundation
import Testing
import TestSupport

/// `adapt registry prune` over real nights (issue 43): the files of old candidates go, every recorded run still
/// replays equal, and a pruned version is listed as pruned, passes `registry verify` and cannot be promoted.
@Suite(.serialized, .timeLimit(.minutes(10))) struct RegistryPruneNightsTests {
    @Test func pruneDeletesOldCandidatesFilesAndEveryRecordedRunStillReplaysEqual() async throws {
        let pipeline = PipelineFixture.pipeline(steps: 2, checkpointInterval: 1)
            .replacingOccurrences(of: "{\"seed\": 7,", with: "{\"seed\": 7, \"privacy\": {\"max_uses_per_example\": 1000},")
        let fixture = try await PipelineFixture.make(pipeline: pipeline)
        try fixture.expectSuccess(await fixture.adapt(["data", "policy", "--lineage", "logbook", "--max-uses", "1000"]))
        var runs: [String] = []
        for day in ["2026-11-01", "2026-11-02", "2026-11-03"] {
            let enqueued = try await fixture.adapt(["enqueue", "nightly", "--lineage", "logbook", "--pipeline", fixture.pipelinePath,
                                                    "--model", "tiny.gguf", "--night", day, "--json"])
            try fixture.expectSuccess(enqueued)
            runs.append(try #require(try JSON.decode(JSONValue.self, from: enqueued.stdout, context: "enqueue")["run_id"]?.stringValue))
            try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        }
        // v1 made active by hand: the last night's candidate is then neither active, in its chain, nor read by a run.
        try fixture.expectSuccess(await fixture.adapt(["registry", "promote", "logbook/v1", "--force"]))

        let dry = try await fixture.adapt(["registry", "prune", "--lineage", "logbook", "--keep", "0", "--dry-run", "--json"])
        try fixture.expectSuccess(dry)
        let planned = try JSON.decode(JSONValue.self, from: dry.stdout, context: "registry prune --dry-run")
        #expect(planned["dry_run"]?.boolValue == true)
        let result = try await fixture.adapt(["registry", "prune", "--lineage", "logbook", "--keep", "0", "--json"])
        try fixture.expectSuccess(result)
        let report = try JSON.decode(JSONValue.self, from: result.stdout, context: "registry prune")
        #expect(Set(report.objectValue?.keys.map { $0 } ?? []) == ["deleted_versions", "freed_bytes", "kept_versions", "dry_run"])
        let deleted = report["deleted_versions"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(deleted.contains("v3") && !deleted.contains("v1"), "\(report)")
        #expect(report["deleted_versions"] == planned["deleted_versions"] && (report["freed_bytes"]?.intValue ?? 0) > 0)

        let listed = try JSON.decode(JSONValue.self, from: try await fixture.adapt(["registry", "list", "--json"]).stdout,
                                     context: "registry list").arrayValue ?? []
        let prunedNames = listed.filter { $0["pruned"]?.boolValue == true }.compactMap { $0["version"]?.stringValue }
        #expect(prunedNames == deleted)
        let verify = try await fixture.adapt(["registry", "verify", "--json"])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        #expect(verify.stdout.contains("\"pruned\""))
        let promote = try await fixture.adapt(["registry", "promote", "logbook/v3", "--force"])
        #expect(promote.status == 1 && promote.stderr.contains("was pruned"), "\(promote.stderr)")

        // What the runs read again (incumbents, the adapter active before each promote) was kept; gc takes nothing more.
        try fixture.expectSuccess(await fixture.adapt(["gc", "--min-age", "0"]))
        for run in runs {
            let replay = try await fixture.adapt(["replay", run, "--check"])
            #expect(replay.status == 0, "\(run): \(replay.stdout)\(replay.stderr)")
        }
    }
}
