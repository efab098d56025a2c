import AdaptCore
import Foundation
import JobQueue
import Storage
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

    /// The follower waits for the events' notifications (it is listed as a follower before the worker starts), and
    /// ends once the run has finished, having printed each event once.
    @Test func followingARunOnPostgresPrintsEachEventOnceAndEndsWithTheRun() async throws {
        let target = try PostgresCluster.shared().makeDatabase()
        let db = ["--database", target]
        let enqueued = try await json(adapt(db + ["enqueue", "noop", "--count", "2", "--chain", "--json"]))
        let run = try #require(enqueued["run_id"]?.stringValue)
        async let following = adapt(db + ["events", "--follow", "--run", run, "--json"])
        let watcher = try PostgresConnection(target)
        let deadline = Date().addingTimeInterval(60)
        while try watcher.scalar("SELECT count(*) FROM job_event_followers").integerValue == 0 && Date() < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        let worked = try await adapt(db + ["worker", "--kinds", "noop", "--exit-when-idle"])
        #expect(worked.status == 0, "\(worked.stderr)")
        let followed = try await following
        #expect(followed.status == 0, "\(followed.stderr)")
        let printed = try followed.stdout.split(separator: "\n").map { try JSON.decode(JSONValue.self, from: String($0), context: "line") }
        let all = try #require(try await json(adapt(db + ["events", "--run", run, "--json"])).arrayValue)
        #expect(printed == all, "every event of the run once, in id order")
        #expect(all.count == 7, "two jobs: pending/ready, running, succeeded, and the second made ready")
        #expect(try watcher.scalar("SELECT count(*) FROM job_event_followers") == .integer(0), "the follower unlisted itself")
    }

    @Test func aCommandNeedingTheStateDirectoryRefusesAPostgresDatabase() async throws {
        let target = "postgresql://adapt@127.0.0.1:1/none"
        for arguments in [["--database", target, "doctor"], ["--database", target, "doctor", "--json"]] {
            let refused = try await adapt(arguments)
            #expect(refused.status == 1, "\(arguments): \(refused.stderr)")
            #expect(refused.stderr.contains("not on PostgreSQL yet"), "\(arguments): \(refused.stderr)")
        }
        let fromEnvironment = try await adapt(["doctor"], environment: ["ADAPT_DATABASE": target])
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

extension PostgresCommandLineTests {
    /// Job 1's cancellation draws its event id first and commits last, after job 2 ran; `events --follow`, which
    /// had already printed job 2's events, prints the cancellation too, and nothing twice.
    @Test func eventsFollowPrintsAnEventCommittedAfterOnesWithHigherIds() async throws {
        let target = try PostgresCluster.shared().makeDatabase()
        let enqueued = try await adapt(["--database", target, "enqueue", "noop", "--count", "2", "--json"])
        #expect(enqueued.status == 0, "\(enqueued.stderr)")
        let follower = try Executables.start("adapt", ["--database", target, "events", "--follow", "--json"],
                                             outputIn: directory.url)
        let late = try PostgresConnection(target)
        try late.execute("BEGIN")
        try late.execute("UPDATE jobs SET state = 'cancelled', finished_at = 1, updated_at = 1, transition_note = 'late' WHERE id = 1")
        let engine = try PostgresJobQueue(connectionString: target)
        let claim = try #require(try engine.claim(kinds: ["noop"], owner: "test", leaseMilliseconds: 60_000))
        #expect(claim.jobID == JobID(2), "the claim skips the job the open transaction holds")
        try engine.complete(claim, output: .object([:]))
        // Several of the follower's 50 ms looks while job 2's events are committed and job 1's is not.
        try await Task.sleep(for: .milliseconds(500))
        try late.execute("COMMIT")

        let deadline = Date().addingTimeInterval(30)
        while follower.stdout.split(separator: "\n").count < 5 && Date() < deadline && follower.isRunning {
            try await Task.sleep(for: .milliseconds(20))
        }
        follower.send(SIGTERM)
        await follower.exited()
        let events = try follower.stdout.split(separator: "\n").map { try JSON.decode(JSONValue.self, from: String($0), context: "follow") }
        let ids = events.compactMap { $0["id"]?.intValue }
        #expect(ids.count == 5 && Set(ids).count == 5, "five events, each once: \(follower.stdout) \(follower.stderr)")
        #expect(events.contains { $0["job_id"] == .string("job-1") && $0["to"] == .string("cancelled") })
        #expect(events.filter { $0["job_id"] == .string("job-2") }.compactMap { $0["to"]?.stringValue } == ["ready", "running", "succeeded"])
    }
}
