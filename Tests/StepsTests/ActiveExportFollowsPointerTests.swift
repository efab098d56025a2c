import AdaptCore
import Foundation
import JobQueue
import Steps
import Storage
import Testing
import TestSupport

/// The active export (`exports/<lineage>/active.gguf` and its `Modelfile`) is derived from the committed active
/// pointer: every command that moves the pointer brings it along after its commit, a failed commit leaves it
/// alone, and what a kill between the commit and the export leaves is repaired when `adapt work` starts again
/// and reported by `adapt doctor`.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ActiveExportFollowsPointerTests {
    static func exports(_ fixture: PipelineFixture) -> URL {
        fixture.directory.state.root.appendingPathComponent("exports/logbook")
    }

    static func exists(_ url: URL) -> Bool { FileManager.default.fileExists(atPath: url.path) }

    /// A night that reaches its promote step with a `better` verdict: prune to eval done, promote still ready.
    static func nightBeforePromote() async throws -> (PipelineFixture, run: String) {
        let fixture = try await PipelineFixture.make()
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle", "--workers", "prune,sample,train,eval"]))
        try #require(try fixture.outputs(run)["eval"]?["outcome"]?.stringValue == "better", "the tiny night must be judged better")
        return (fixture, run)
    }

    /// `adapt doctor --json`'s `active_exports` check: (status, detail); nil when doctor has none.
    static func doctorCheck(_ fixture: PipelineFixture) async throws -> (status: String, detail: String)? {
        let config = fixture.directory.file("config")
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        let result = try await fixture.adapt(["doctor", "--json"],
                                             environment: ["XDG_CONFIG_HOME": config.path, "ADAPT_SYSTEMCTL": "", "ADAPT_LOGINCTL": ""])
        let document = try JSON.decode(JSONValue.self, from: result.stdout, context: "doctor: \(result.stderr)")
        guard let check = document["checks"]?.arrayValue?.first(where: { $0["name"]?.stringValue == "active_exports" }) else { return nil }
        return (check["status"]?.stringValue ?? "", check["detail"]?.stringValue ?? "")
    }

    /// The active version's name per `registry list`, nil for the base model.
    static func activeVersion(_ fixture: PipelineFixture) async throws -> String? {
        let list = try await fixture.adapt(["registry", "list", "--json"])
        try fixture.expectSuccess(list)
        let versions = try #require(try JSON.decode(JSONValue.self, from: list.stdout, context: "registry list").arrayValue)
        return versions.first { $0["active"]?.boolValue == true }?["version"]?.stringValue
    }

    /// Checks that the export serves `version`: its GGUF is byte for byte `registry export`'s of that version.
    static func expectExportServes(_ version: String, _ fixture: PipelineFixture, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let reference = fixture.directory.file("reference-\(version).gguf")
        let model = fixture.directory.state.models.appendingPathComponent("tiny.gguf").path
        try fixture.expectSuccess(await fixture.adapt(["registry", "export", "logbook", "--version", version, "--format", "gguf-lora",
                                                       "--out", reference.path, "--model", model]))
        let gguf = exports(fixture).appendingPathComponent("active.gguf")
        #expect(FileManager.default.contents(atPath: gguf.path) == FileManager.default.contents(atPath: reference.path),
                "the export does not hold \(version)", sourceLocation: sourceLocation)
        #expect(exists(exports(fixture).appendingPathComponent("Modelfile")), sourceLocation: sourceLocation)
    }

    @Test func forgetRetiringTheActiveVersionRemovesItsExportAndAStaleCopyIsRemovedWhenWorkStarts() async throws {
        let (fixture, run) = try await Self.nightBeforePromote()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle", "--workers", "promote"]))
        #expect(try await Self.activeVersion(fixture) == "v1")
        try await Self.expectExportServes("v1", fixture)
        let gguf = Self.exports(fixture).appendingPathComponent("active.gguf")
        let modelfile = Self.exports(fixture).appendingPathComponent("Modelfile")
        let served = (try #require(FileManager.default.contents(atPath: gguf.path)), try #require(FileManager.default.contents(atPath: modelfile.path)))

        let id = try #require(try await ErasureTests().sampledExamples(fixture, run: run, count: 1).first?["id"]?.stringValue)
        let forget = try await fixture.adapt(["data", "forget", "--id", id, "--retire-adapters", "--json"])
        try fixture.expectSuccess(forget)
        let report = try JSON.decode(JSONValue.self, from: forget.stdout, context: "forget")
        #expect(report["active_moves"]?.arrayValue?.first?["to"] == .null, "\(forget.stdout)")
        let exports = try #require(report["active_exports"]?.arrayValue, "\(forget.stdout)")
        #expect(exports.count == 1 && exports.first?["lineage"]?.stringValue == "logbook" && exports.first?["active"] == .null
                && exports.first?["error"] == .null, "\(forget.stdout)")
        #expect(try await Self.activeVersion(fixture) == nil)
        // The retired adapter is served no more: the lineage is on the base model, and so is its export.
        #expect(!Self.exists(gguf) && !Self.exists(modelfile), "the export still serves the retired adapter")
        #expect(try await Self.doctorCheck(fixture)?.status == "ok")

        // An export left ahead of the pointer (as a promotion whose commit failed used to leave one) is reported
        // by doctor and removed when work starts.
        try served.0.write(to: gguf)
        try served.1.write(to: modelfile)
        let check = try #require(try await Self.doctorCheck(fixture))
        #expect(check.status == "warning" && check.detail.contains("base model"), "\(check)")
        let work = try await fixture.adapt(["work", "--exit-when-idle", "--workers", "prune"])
        try fixture.expectSuccess(work)
        #expect(work.stderr.contains("active export of logbook was removed"), "\(work.stderr)")
        #expect(!Self.exists(gguf) && !Self.exists(modelfile))
        #expect(try await Self.doctorCheck(fixture)?.status == "ok")
    }

    @Test func aPromoteKilledBetweenItsCommitAndItsExportGetsItsExportWhenWorkStartsAgain() async throws {
        let (fixture, _) = try await Self.nightBeforePromote()
        let promote = try Executables.start("adapt-promote-worker", ["--state", fixture.statePath, "--exit-when-idle"],
                                            environment: ["ADAPT_TEST_PAUSE_AT": "promote.before-export"], outputIn: fixture.directory.url)
        try await StaleWorkerTests.waitUntilStopped(promote)
        promote.send(SIGKILL)
        _ = try await blocking { promote.wait() }

        // The promotion is committed; the export it would have written is not there.
        #expect(try await Self.activeVersion(fixture) == "v1")
        #expect(!Self.exists(Self.exports(fixture).appendingPathComponent("active.gguf")))
        let check = try #require(try await Self.doctorCheck(fixture))
        #expect(check.status == "warning" && check.detail.contains("logbook/v1 is active, but its export is missing"), "\(check)")

        let work = try await fixture.adapt(["work", "--exit-when-idle", "--workers", "prune"])
        try fixture.expectSuccess(work)
        #expect(work.stderr.contains("active export of logbook was rewritten for v1"), "\(work.stderr)")
        try await Self.expectExportServes("v1", fixture)
        #expect(try await Self.doctorCheck(fixture)?.status == "ok")
    }

    @Test func aPromoteWhoseCommitFailsWritesNoExportAheadOfThePointer() async throws {
        let (fixture, run) = try await Self.nightBeforePromote()
        let database = try Database(path: fixture.directory.state.database.path, durability: .normal)
        let output = try FencedCompletionTests.body("promote", fixture, run: run, database: database)
        let finalize = try #require(output.finalize)
        struct CommitFailed: Error {}
        #expect(throws: CommitFailed.self) {
            try database.transaction {
                try finalize(database)
                throw CommitFailed()
            }
        }
        // Nothing was promoted, so nothing may be served.
        #expect(try await Self.activeVersion(fixture) == nil)
        #expect(!Self.exists(Self.exports(fixture).appendingPathComponent("active.gguf")), "the export ran ahead of the pointer")
        #expect(try await Self.doctorCheck(fixture)?.status == "ok")

        // The step then runs again and commits: the export follows.
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle", "--workers", "promote"]))
        #expect(try await Self.activeVersion(fixture) == "v1")
        try await Self.expectExportServes("v1", fixture)
    }
}
