import AdaptCore
import Foundation
import JobQueue
import Testing
import TestSupport

/// `adapt`'s job commands on PostgreSQL (`--database postgres://…`, `ADAPT_DATABASE`) through the real
/// executable, and the commands that refuse it because what they need is not on PostgreSQL yet.
@Suite(.serialized) struct PostgresCommandLineTests {
    let directory = TemporaryDirectory("adapt-pg-cli")
    var state: String { directory.file("state").path }

    func adapt(_ arguments: [String], environment: [String: String] = [:]) async throws -> ProcessResult {
        try await Executables.runAsync("adapt", ["--state", state] + arguments, environment: environment)
    }

    func json(_ result: ProcessResult) throws -> JSONValue {
        try JSON.decode(JSONValue.self, from: result.stdout, context: "stdout")
    }

    @Test func theJobCommandsRunOnPostgresAndLeaveNoStateDirectory() async throws {
        let target = try PostgresCluster.shared().makeDatabase()
        let db = ["--database", target]
        let enqueued = try await json(adapt(db + ["enqueue", "noop", "--count", "4", "--chain", "--json"]))
        #expect(enqueued["job_ids"]?.arrayValue?.count == 4)
        let worked = try await adapt(db + ["worker", "--kinds", "noop", "--exit-when-idle", "--json"])
        #expect(worked.status == 0, "\(worked.stderr)")
        #expect(try json(worked)["succeeded"] == .int(4))
        let jobs = try await adapt(["jobs", "--json"], environment: ["ADAPT_DATABASE": target])
        #expect(jobs.status == 0, "\(jobs.stderr)")
        #expect(try json(jobs).arrayValue?.compactMap { $0["state"]?.stringValue } == Array(repeating: "succeeded", count: 4))
        let runs = try await json(adapt(db + ["runs", "--json"]))
        #expect(runs.arrayValue?.first?["state"]?.stringValue == "succeeded")
        let shown = try await adapt(db + ["show", "job-2", "--json"])
        #expect(try json(shown)["depends_on"] == .array([.string("job-1")]), "\(shown.stderr)")
        #expect(try await json(adapt(db + ["rescue", "--json"])) == .array([]))
        let second = try await json(adapt(db + ["enqueue", "noop", "--count", "2", "--json"]))
        let run = try #require(second["run_id"]?.stringValue)
        let cancelled = try await json(adapt(db + ["cancel", run, "--json"]))
        #expect(cancelled["cancelled"] == .int(2))
        let retried = try await adapt(db + ["retry", "job-5", "--json"])
        #expect(try json(retried)["state"] == .string("ready"), "\(retried.stderr)")
        #expect(!FileManager.default.fileExists(atPath: state), "nothing was written to the state directory")
    }

    @Test func aCommandNeedingTheStateDirectoryRefusesAPostgresDatabase() async throws {
        let target = "postgresql://adapt@127.0.0.1:1/none"
        for arguments in [["--database", target, "data", "list"], ["--database", target, "replay", "run-1"],
                          ["--database", target, "prune-history", "--older-than", "1"]] {
            let refused = try await adapt(arguments)
            #expect(refused.status == 1, "\(arguments): \(refused.stderr)")
            #expect(refused.stderr.contains("not on PostgreSQL yet"), "\(arguments): \(refused.stderr)")
        }
        let fromEnvironment = try await adapt(["registry", "list"], environment: ["ADAPT_DATABASE": target])
        #expect(fromEnvironment.status == 1 && fromEnvironment.stderr.contains("not on PostgreSQL yet"), "\(fromEnvironment.stderr)")
        #expect(!FileManager.default.fileExists(atPath: state), "the state directory was not used instead")
    }

    @Test func anUnreachableDatabaseIsNamedWithoutItsPassword() async throws {
        let refused = try await adapt(["--database", "postgresql://adapt:hunter2@127.0.0.1:1/none?connect_timeout=2", "jobs"])
        #expect(refused.status == 1)
        #expect(!refused.stderr.contains("hunter2") && refused.stderr.contains("***"), "\(refused.stderr)")
        let path = try await adapt(["--database", directory.file("x.sqlite").path, "jobs"])
        #expect(path.status == 2 && path.stderr.contains("postgres://"), "\(path.stderr)")
    }
}
