import AdaptCore
import Foundation
import Storage
import Testing
import TestSupport

/// A night's fixture on either backend, driven through the built `adapt`: on SQLite the fixture's state directory;
/// on PostgreSQL a fresh database of the test cluster holding the fixture's buffer (copied there by `adapt migrate`
/// before any run exists) and a host directory that holds only the model.
struct BackendNight: Sendable {
    let backend: Backend
    let fixture: PipelineFixture
    /// The PostgreSQL database and this host's own directory; nil on SQLite.
    let postgres: (url: String, host: TemporaryDirectory)?

    static func make(_ backend: Backend, pipeline: String = PipelineFixture.pipeline()) async throws -> BackendNight {
        let fixture = try await PipelineFixture.make(pipeline: pipeline)
        guard backend == .postgres else { return BackendNight(backend: backend, fixture: fixture, postgres: nil) }
        let url = try PostgresCluster.shared().makeDatabase()
        try fixture.expectSuccess(await blocking { try Executables.run("adapt", ["migrate", "--from", fixture.statePath, "--to", url]) })
        let host = TemporaryDirectory("adapt-pg-host")
        try host.state.create()
        try PrivateFiles.createDirectory(host.state.models)
        try FileManager.default.copyItem(at: fixture.directory.state.models.appendingPathComponent("tiny.gguf"),
                                         to: host.state.models.appendingPathComponent("tiny.gguf"))
        return BackendNight(backend: backend, fixture: fixture, postgres: (url, host))
    }

    /// `--state` (the host's directory on PostgreSQL) and `--database` where there is one.
    var global: [String] {
        guard let postgres else { return ["--state", fixture.statePath] }
        return ["--state", postgres.host.state.root.path, "--database", postgres.url]
    }

    @discardableResult
    func adapt(_ arguments: [String]) async throws -> ProcessResult {
        let all = global + arguments
        return try await blocking { try Executables.run("adapt", all) }
    }

    /// Enqueues the logbook run of the fixture's night; returns its run id.
    func enqueue() async throws -> String {
        let result = try await adapt(["enqueue", "nightly", "--lineage", "logbook", "--pipeline", fixture.pipelinePath,
                                      "--model", "tiny.gguf", "--night", fixture.night, "--json"])
        try fixture.expectSuccess(result)
        return try #require(try JSON.decode(JSONValue.self, from: result.stdout, context: "enqueue output")["run_id"]?.stringValue)
    }

    /// The JSON document a successful command printed.
    func json(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) async throws -> JSONValue {
        let result = try await adapt(arguments)
        try fixture.expectSuccess(result, sourceLocation: sourceLocation)
        return try JSON.decode(JSONValue.self, from: result.stdout, context: arguments.joined(separator: " "))
    }
}
