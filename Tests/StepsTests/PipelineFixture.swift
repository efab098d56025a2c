import AdaptCore
import Foundation
import JobQueue
import Storage
import Testing
import TestSupport

/// A scratch state directory holding the tiny model and the bundled `logbook` lineage, with a small pipeline
/// file: what every pipeline test starts from. Everything runs through the built executables.
final class PipelineFixture: Sendable {
    let directory = TemporaryDirectory("adapt-steps")
    let night = "2026-11-30"

    /// Small enough for a few seconds of training on the tiny model; `steps` and the checkpoint interval vary.
    static func pipeline(steps: Int = 16, checkpointInterval: Int = 4, device: String = #"{"min_available_memory_mb": 64}"#,
                         maxAttempts: Int? = nil) -> String {
        // Every kill of a worker costs its step an attempt; the chaos test allows many.
        var graph = ""
        if let attempts = maxAttempts {
            let kinds = ["prune", "sample", "train", "eval", "promote"]
            let steps = kinds.enumerated().map { index, kind in
                let parent = index == 0 ? "" : "\"" + kinds[index - 1] + "\""
                return "{\"name\": \"\(kind)\", \"kind\": \"\(kind)\", \"depends_on\": [\(parent)], \"max_attempts\": \(attempts)}"
            }
            graph = "\"steps\": [" + steps.joined(separator: ", ") + "],"
        }
        return """
        {"seed": 7, \(graph)
         "train": {"steps": \(steps), "checkpoint_interval": \(checkpointInterval), "batch_size": 2, "warmup_steps": 2,
                   "max_length": 96, "early_stopping": null, "learning_rate": 0.01},
         "device": \(device)}
        """
    }

    /// The repository's root (for the bundled example lineage).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    var statePath: String { directory.state.root.path }
    var pipelinePath: String { directory.file("pipeline.json").path }

    private init(pipeline: String) throws {
        try directory.state.create()
        try PrivateFiles.createDirectory(directory.state.models)
        try Data(pipeline.utf8).write(to: directory.file("pipeline.json"))
    }

    /// The tiny model in models/, the pipeline file, and (unless `importData` is false) the logbook lineage.
    static func make(pipeline: String = PipelineFixture.pipeline(), importData: Bool = true) async throws -> PipelineFixture {
        let fixture = try PipelineFixture(pipeline: pipeline)
        let model = fixture.directory.state.models.appendingPathComponent("tiny.gguf").path
        try fixture.expectSuccess(await fixture.adapt(["model", "tiny", "--out", model]))
        if importData {
            for file in ["train.jsonl", "held_out.jsonl"] {
                let path = Self.root.appendingPathComponent("pipelines/examples/logbook/\(file)").path
                try fixture.expectSuccess(await fixture.adapt(["data", "import", path, "--lineage", "logbook"]))
            }
        }
        return fixture
    }

    /// Runs `adapt --state <fixture> …` (on a thread of its own while it waits).
    @discardableResult
    func adapt(_ arguments: [String], environment: [String: String] = [:]) async throws -> ProcessResult {
        let all = ["--state", statePath] + arguments
        return try await blocking { try Executables.run("adapt", all, environment: environment) }
    }

    /// Enqueues the logbook run of the fixture's night; returns its run id.
    func enqueue(extra: [String] = []) async throws -> String {
        let result = try await adapt(["enqueue", "nightly", "--lineage", "logbook", "--pipeline", pipelinePath, "--model", "tiny.gguf",
                                "--night", night, "--json"] + extra)
        try expectSuccess(result)
        let json = try JSON.decode(JSONValue.self, from: result.stdout, context: "enqueue output")
        return try #require(json["run_id"]?.stringValue)
    }

    func queue() throws -> JobQueue {
        try JobQueue(database: try Database(path: directory.state.database.path, durability: .normal))
    }

    /// The outputs of the run's jobs by step name.
    func outputs(_ run: String) throws -> [String: JSONValue] {
        let queue = try queue()
        let runID: RunID = try #require(RunID.parse(run))
        let jobs = try queue.jobs(matching: .init(run: runID))
        var out: [String: JSONValue] = [:]
        for job in jobs { if let output = job.output { out[job.name] = output } }
        return out
    }

    func expectSuccess(_ result: ProcessResult, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(result.status == 0, "exit \(result.status): \(result.stderr)", sourceLocation: sourceLocation)
        if result.status != 0 { throw ExitStatus(status: result.status) }
    }

    struct ExitStatus: Error { let status: Int32 }
}
