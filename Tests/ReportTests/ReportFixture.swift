import AdaptCore
import Foundation
import Testing
import TestSupport

/// A scratch state with the tiny model and the bundled `logbook` lineage, whose nightly runs the built executables
/// make for real (`adapt enqueue nightly`, `adapt work`), so that a report is drawn from what a run really stored.
final class ReportFixture: Sendable {
    let directory = TemporaryDirectory("adapt-report")

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A few seconds of training on the tiny model; `eval` adds eval parameters (e.g. a `min_pairs` no night meets).
    static func pipeline(steps: Int = 16, checkpointInterval: Int = 4, maxAttempts: Int? = nil, eval: String? = nil) -> String {
        var graph = ""
        if let attempts = maxAttempts {
            let kinds = ["prune", "sample", "train", "eval", "promote"]
            graph = "\"steps\": [" + kinds.enumerated().map { index, kind in
                "{\"name\": \"\(kind)\", \"kind\": \"\(kind)\", \"depends_on\": [\(index == 0 ? "" : "\"\(kinds[index - 1])\"")], \"max_attempts\": \(attempts)}"
            }.joined(separator: ", ") + "],"
        }
        return """
        {"seed": 7, \(graph) \(eval.map { "\"eval\": \($0)," } ?? "")
         "train": {"steps": \(steps), "checkpoint_interval": \(checkpointInterval), "batch_size": 2, "warmup_steps": 2,
                   "max_length": 96, "early_stopping": null, "learning_rate": 0.01},
         "device": {"min_available_memory_mb": 64}}
        """
    }

    var statePath: String { directory.state.root.path }

    private init() {}

    static func make() async throws -> ReportFixture {
        let fixture = ReportFixture()
        try fixture.directory.state.create()
        try PrivateFiles.createDirectory(fixture.directory.state.models)
        try fixture.expectSuccess(await fixture.adapt(["model", "tiny", "--out", fixture.directory.state.models.appendingPathComponent("tiny.gguf").path]))
        for file in ["train.jsonl", "held_out.jsonl"] {
            let path = root.appendingPathComponent("pipelines/examples/logbook/\(file)").path
            try fixture.expectSuccess(await fixture.adapt(["data", "import", path, "--lineage", "logbook"]))
        }
        return fixture
    }

    @discardableResult
    func adapt(_ arguments: [String], environment: [String: String] = [:]) async throws -> ProcessResult {
        try await Executables.runAsync("adapt", ["--state", statePath] + arguments, environment: environment)
    }

    /// Enqueues the night's run with `pipeline`; returns its run id.
    func enqueue(night: String, pipeline: String = ReportFixture.pipeline()) async throws -> String {
        let file = directory.file("pipeline-\(night).json")
        try Data(pipeline.utf8).write(to: file)
        let result = try await adapt(["enqueue", "nightly", "--lineage", "logbook", "--pipeline", file.path, "--model", "tiny.gguf",
                                      "--night", night, "--json"])
        try expectSuccess(result)
        return try #require(try json(result.stdout)["run_id"]?.stringValue)
    }

    /// Runs the workers until nothing is left to do.
    func work(_ kinds: String? = nil) async throws {
        try expectSuccess(await adapt(["work", "--exit-when-idle"] + (kinds.map { ["--workers", $0] } ?? [])))
    }

    /// `adapt report … --json` and the page written by the same call.
    func report(_ arguments: [String]) async throws -> (data: JSONValue, page: URL) {
        let page = directory.file("report-\(UUID().uuidString.prefix(6)).html")
        let result = try await adapt(["report"] + arguments + ["--out", page.path, "--json"])
        try expectSuccess(result)
        return (try json(result.stdout), page)
    }

    /// Claims of the run's jobs as the event table holds them: events into `running` from another state.
    func claims(_ run: String) async throws -> Int {
        let events = try json(try await adapt(["events", "--run", run, "--json"]).stdout).arrayValue ?? []
        return events.filter { $0["to"]?.stringValue == "running" && $0["from"]?.stringValue != "running" }.count
    }

    /// The stored output of the run's job named `step`.
    func output(_ run: String, step: String) async throws -> JSONValue? {
        let shown = try json(try await adapt(["show", run, "--json"]).stdout)
        guard let job = shown["jobs"]?.arrayValue?.first(where: { $0["name"]?.stringValue == step }),
              let id = job["id"]?.stringValue else { return nil }
        return try json(try await adapt(["show", id, "--json"]).stdout)["output"]
    }

    func json(_ text: String) throws -> JSONValue { try JSON.decode(JSONValue.self, from: Data(text.utf8), context: "adapt output") }

    func expectSuccess(_ result: ProcessResult, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(result.status == 0, "exit \(result.status): \(result.stderr)", sourceLocation: sourceLocation)
        if result.status != 0 { throw ExitStatus(status: result.status, stderr: result.stderr) }
    }

    struct ExitStatus: Error { let status: Int32; let stderr: String }
}
