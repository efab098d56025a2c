import AdaptCore
import Foundation
import Testing
import TestSupport

/// The state directory is private by default (issue 16): directories 0700 and files 0600 whatever the umask,
/// and a looser one is tightened when opened, said once.
@Suite(.serialized) struct PrivateStateTests {
    @Test func everyPathUnderTheStateIsPrivateUnderUmask022AfterImportPruneAndSample() async throws {
        let directory = TemporaryDirectory("adapt-modes")
        let state = directory.url.appendingPathComponent("state")
        let pipeline = directory.file("pipeline.json")
        try Data(PipelineFixture.pipeline(steps: 4, checkpointInterval: 2).utf8).write(to: pipeline)
        func adapt(_ arguments: [String]) async throws {
            let result = try await adaptUnderShell("umask 022", ["--state", state.path] + arguments)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            #expect(!result.stderr.contains("readable by other users"), "a fresh state needed tightening: \(result.stderr)")
        }
        try await adapt(["model", "tiny", "--out", state.appendingPathComponent("models/tiny.gguf").path])
        for file in ["train.jsonl", "held_out.jsonl"] {
            try await adapt(["data", "import", PipelineFixture.root.appendingPathComponent("pipelines/examples/logbook/\(file)").path,
                             "--lineage", "logbook"])
        }
        try await adapt(["enqueue", "nightly", "--lineage", "logbook", "--pipeline", pipeline.path, "--model", "tiny.gguf",
                         "--night", "2026-11-30"])
        try await adapt(["work", "--exit-when-idle", "--workers", "prune,sample"])

        let modes = PrivacyScan.modes(under: state)
        #expect(modes.contains { $0.path.hasSuffix("adapt.sqlite") })
        #expect(modes.contains { $0.path.contains("/blobs/") && !$0.isDirectory }, "no blob was written")
        for entry in modes {
            let expected: mode_t = entry.isDirectory ? 0o700 : 0o600
            #expect(entry.mode == expected, "\(entry.path) is \(String(entry.mode, radix: 8)), not \(String(expected, radix: 8))")
        }
    }

    @Test func aLooserStateIsTightenedWhenOpenedAndThatIsSaidOnce() async throws {
        let fixture = try await PipelineFixture.make(importData: false)
        let file = fixture.directory.file("x.jsonl")
        try Data("{\"text\": \"a\"}\n".utf8).write(to: file)
        try fixture.expectSuccess(await fixture.adapt(["data", "import", file.path, "--lineage", "mail"]))
        let root = fixture.directory.state.root
        for entry in PrivacyScan.modes(under: root) { chmod(entry.path, entry.isDirectory ? 0o755 : 0o644) }

        let first = try await fixture.adapt(["data", "list"])
        try fixture.expectSuccess(first)
        #expect(first.stderr.split(separator: "\n").filter { $0.contains("readable by other users") }.count == 1, "\(first.stderr)")
        for entry in PrivacyScan.modes(under: root) {
            #expect(entry.mode == (entry.isDirectory ? 0o700 : 0o600), "\(entry.path) is \(String(entry.mode, radix: 8))")
        }
        let second = try await fixture.adapt(["data", "list"])
        #expect(!second.stderr.contains("readable by other users"), "said again: \(second.stderr)")
    }
}
