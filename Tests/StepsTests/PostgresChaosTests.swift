import AdaptCore
import Foundation
import JobQueue
import Storage
import Testing
import TestSupport

/// Chaos on PostgreSQL (issue 22): two hosts (an `adapt work` each, with a state directory of its own) share only
/// the database while a night runs; a train worker is killed (SIGKILL), the next one is paused (SIGSTOP) past its
/// lease and let go again (SIGCONT), and the server is stopped (`pg_ctl stop -m immediate`) and started again. The
/// run ends with the adapter and gate report of an undisturbed night, every step recorded once.
@Suite(.serialized, .timeLimit(.minutes(10))) struct PostgresChaosTests {
    static let lease = 3000

    /// The pid of the worker running the run's train step and its attempt, once `ready` says so.
    static func trainWorker(_ queue: PostgresJobQueue, _ run: RunID,
                            where ready: (JobRecord) throws -> Bool = { _ in true }) throws -> (pid: Int32, attempt: Int)? {
        guard let train = try queue.jobs(matching: .init(run: run, kind: "train")).first, train.state == .running, try ready(train),
              let pid = train.leaseOwner?.split(separator: "/").last.flatMap({ Int32($0) }) else { return nil }
        return (pid, train.attempt)
    }

    @Test func aNightSurvivesKilledAndPausedWorkersAndAServerRestart() async throws {
        let expected = try await PostgresNightlyTests.nightOnSQLite()
        let cluster = try PostgresCluster()
        defer { try? cluster.stop() }
        let directory = TemporaryDirectory("adapt-pg-chaos")
        let (url, hosts) = try await PostgresNightlyTests.sharedDatabase(hosts: 2, in: directory, on: cluster)
        let run = try await PostgresNightlyTests.enqueue(on: url, host: hosts[0], pipeline: expected.fixture.pipelinePath,
                                                        night: expected.fixture.night)
        let supervisors = try hosts.map { host in
            try Executables.start("adapt", ["--state", host, "--database", url, "work", "--exit-when-idle", "--lease-ms", "\(Self.lease)"],
                                  outputIn: directory.url)
        }
        let queue = try PostgresJobQueue(connectionString: url)

        // 1. The train worker, once its first checkpoint is in the database: killed.
        var killed: (pid: Int32, attempt: Int)?
        try await PostgresNightlyTests.waitUntil("the train step has a checkpoint") {
            killed = try Self.trainWorker(queue, run) { try queue.checkpointPointer(job: $0.id) != nil }
            if let killed { kill(killed.pid, SIGKILL) }
            return killed != nil
        }
        // 2. The worker of the next attempt: paused past its lease, until another attempt runs, then let go.
        var paused: (pid: Int32, attempt: Int)?
        try await PostgresNightlyTests.waitUntil("another train worker runs the step") {
            paused = try Self.trainWorker(queue, run) { $0.attempt > (killed?.attempt ?? 0) }
            if let paused { kill(paused.pid, SIGSTOP) }
            return paused != nil
        }
        try await PostgresNightlyTests.waitUntil("the paused worker's step runs elsewhere") {
            try Self.trainWorker(queue, run) { $0.attempt > (paused?.attempt ?? 0) } != nil
        }
        if let paused { kill(paused.pid, SIGCONT) }
        // 3. The server, while the train step runs: stopped at once and started again 2 s later.
        try await PostgresNightlyTests.waitUntil("the train step runs") { try Self.trainWorker(queue, run) != nil }
        try cluster.stopServer()
        try await Task.sleep(for: .seconds(2))
        try cluster.startServer()
        try queue.connection.reconnect()

        for supervisor in supervisors {
            #expect(try await blocking { supervisor.wait() } == 0, "\(supervisor.stderr)")
        }
        let stderr = supervisors.map(\.stderr).joined(separator: "\n")
        #expect(stderr.contains("database unreachable"), "no worker said it waited for the server")
        #expect(stderr.contains("restarting"), "the killed worker was not restarted")
        #expect(stderr.contains("lost their lease") || stderr.contains("lost the lease"), "the paused worker's late result was not refused")

        try PostgresNightlyTests.expectEachStepSucceededOnce(queue, run)
        let train = try #require(try queue.jobs(matching: .init(run: run, kind: "train")).first)
        #expect(train.attempt >= 3, "attempt \(train.attempt)")
        let outputs = try PostgresNightlyTests.outputs(queue, run)
        #expect(outputs["train"]?["adapter_digest"] == expected.adapter)
        #expect(outputs["eval"]?["gate"] == expected.gate)
        let versions = try queue.connection.scalar("SELECT count(*) FROM registry_versions WHERE lineage = 'logbook'").integerValue
        #expect(versions == 1, "the promote step registered \(versions ?? 0) versions")
    }
}
