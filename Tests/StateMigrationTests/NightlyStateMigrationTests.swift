import AdaptCore
import Foundation
import Services
import Storage
import Testing
import TestSupport

/// A state made by real nights (the tiny model, the bundled logbook lineage, two nightly runs worked by the
/// built workers) goes to PostgreSQL and back; the copy is the same state to the commands that read it.
@Suite struct NightlyStateMigrationTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func twoNightsCopiedToPostgresAndBackReplayAndShowTheSame() throws {
        let directory = TemporaryDirectory("migrate-nightly")
        let state = directory.state.root.path
        func adapt(_ arguments: [String], in state: String = state) throws -> ProcessResult {
            let result = try Executables.run("adapt", ["--state", state] + arguments)
            #expect(result.status == 0, "adapt \(arguments.joined(separator: " ")): \(result.stderr)")
            return result
        }
        try directory.state.create()
        try PrivateFiles.createDirectory(directory.state.models)
        let pipeline = directory.file("pipeline.json")
        try Data("""
            {"seed": 7, "train": {"steps": 8, "checkpoint_interval": 4, "batch_size": 2, "warmup_steps": 2, "max_length": 96,
             "early_stopping": null, "learning_rate": 0.01}, "device": {"min_available_memory_mb": 64}}
            """.utf8).write(to: pipeline)
        _ = try adapt(["model", "tiny", "--out", directory.state.models.appendingPathComponent("tiny.gguf").path])
        for file in ["train.jsonl", "held_out.jsonl"] {
            _ = try adapt(["data", "import", Self.root.appendingPathComponent("pipelines/examples/logbook/\(file)").path,
                           "--lineage", "logbook"])
        }
        for night in ["2026-11-29", "2026-11-30"] {
            _ = try adapt(["enqueue", "nightly", "--lineage", "logbook", "--pipeline", pipeline.path, "--model", "tiny.gguf",
                           "--night", night])
        }
        _ = try adapt(["work", "--exit-when-idle"])

        let database = try PostgresCluster.shared().makeDatabase()
        let back = directory.file("back")
        let there = try StateMigration.run(from: .directory(directory.state.root), to: .postgres(database))
        let again = try StateMigration.run(from: .postgres(database), to: .directory(back))
        for (first, second) in zip(there.components, again.components) {
            #expect(first.sourceDigest == second.targetDigest, "\(first.component)")
        }
        let rows = Dictionary(uniqueKeysWithValues: there.components.flatMap(\.tables).map { ($0.table, $0.sourceRows) })
        #expect(rows["jobs"] == 10 && rows["replay_uses"] ?? 0 > 0 && rows["replay_blobs"] ?? 0 > 0)
        #expect(rows["registry_versions"] == 2)
        #expect(there.blobs.count == again.blobs.count && there.blobs.sourceDigest == again.blobs.targetDigest)

        // The models are not state: the copy needs the same model to replay.
        try PrivateFiles.createDirectory(back.appendingPathComponent("models"))
        try FileManager.default.linkItem(at: directory.state.models.appendingPathComponent("tiny.gguf"),
                                         to: back.appendingPathComponent("models/tiny.gguf"))
        for arguments in [["runs", "--json"], ["registry", "list", "--json"], ["data", "list", "--json"], ["show", "run-2", "--json"]] {
            #expect(try adapt(arguments, in: back.path).stdout == (try adapt(arguments)).stdout, "\(arguments)")
        }
        let replay = try adapt(["replay", "run-2", "--check", "--json"], in: back.path)
        #expect(replay.stdout.contains("\"equal\" : true"), "\(replay.stdout)")
    }
}
