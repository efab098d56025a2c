import AdaptCore
import Foundation
import JobQueue
import Storage
import Testing
import TestSupport

/// Chaos on PostgreSQL (issue 22): two hosts share only the database while a night runs. Each host is an
/// `adapt work` with a state directory of its own, in a network namespace of its own, reaching the server over
/// its veth pair. A train worker is killed (SIGKILL); the next one is paused (SIGSTOP) past its lease and let go
/// again (SIGCONT); the link of the host running the step after that is cut past its lease, until the step runs
/// on the other host, and brought back; and the server is stopped (`pg_ctl stop -m immediate`) and started
/// again. The run ends with the adapter and gate report of an undisturbed night, every step recorded once.
@Suite(.serialized, .timeLimit(.minutes(Slowdown.minutes(10)))) struct PostgresChaosTests {
    static let lease = 3000
    /// How long the test waits for each moment of the chaos: a night takes 20 to 30 s in all, so a wait this long
    /// means the moment never comes (a broken fence keeps the rescued step from running elsewhere, say).
    static let patience = Slowdown.scaled(seconds: 120)

    /// One host: its network, and the `adapt work` running there.
    struct Host {
        let network: NetworkNamespace
        let supervisor: RunningProcess

        /// Whether `worker` is one of this host's: the tag `adapt work` gives
        /// each worker it spawns names the supervisor's pid.
        func runs(_ worker: TrainWorker) -> Bool { worker.owner.contains("/work-\(supervisor.pid).") }
    }

    /// The worker process running the train step, and the attempt it runs.
    struct TrainWorker {
        let pid: Int32
        let attempt: Int
        let owner: String
    }

    /// The worker running the run's train step, once `ready` says so.
    static func trainWorker(_ queue: PostgresJobQueue, _ run: RunID,
                            where ready: (JobRecord) throws -> Bool = { _ in true }) throws -> TrainWorker? {
        guard let train = try queue.jobs(matching: .init(run: run, kind: "train")).first, train.state == .running,
              try ready(train), let owner = train.leaseOwner, let pid = owner.split(separator: "/").last.flatMap({ Int32($0) }) else { return nil }
        return TrainWorker(pid: pid, attempt: train.attempt, owner: owner)
    }

    /// Starts `adapt work` for `state` in `network`, in a scratch directory of its own, reaching the cluster over
    /// the network's veth pair. A statement left unanswered for 2 s ends the connection (`tcp_user_timeout`), so
    /// a cut link is noticed within the test's lease rather than after the 10 s every connection gets by default.
    static func startHost(_ state: String, in network: NetworkNamespace, cluster: PostgresCluster, database: String,
                          scratch: URL) throws -> Host {
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let url = "postgresql://adapt@\(network.hostAddress):\(cluster.port)/\(database)?connect_timeout=2&tcp_user_timeout=2000"
        let supervisor = try network.start(Executables.url("adapt"), [
            "--state", state, "--database", url, "work", "--exit-when-idle", "--lease-ms", "\(lease)",
        ], in: scratch)
        return Host(network: network, supervisor: supervisor)
    }

    @Test func aNightOnHostsInNetworksOfTheirOwnSurvivesKilledPausedAndCutOffWorkersAndAServerRestart() async throws {
        let expected = try await PostgresNightlyTests.nightOnSQLite()
        let networks = [try NetworkNamespace(), try NetworkNamespace()]
        let cluster = try PostgresCluster(alsoListeningOn: networks.map(\.hostAddress), trusting: networks.map(\.subnet))
        defer { try? cluster.stop() }
        let directory = TemporaryDirectory("adapt-pg-chaos")
        let (url, states) = try await PostgresNightlyTests.sharedDatabase(hosts: 2, in: directory, on: cluster)
        let run = try await PostgresNightlyTests.enqueue(on: url, host: states[0], pipeline: expected.fixture.pipelinePath,
                                                        night: expected.fixture.night)
        let database = try #require(URL(string: url)?.lastPathComponent)
        let hosts = try networks.indices.map { index in
            try Self.startHost(states[index], in: networks[index], cluster: cluster, database: database,
                               scratch: directory.url.appendingPathComponent("scratch-\(index)"))
        }
        let queue = try PostgresJobQueue(connectionString: url)
        let trainJob = try #require(try queue.jobs(matching: .init(run: run, kind: "train")).first).id

        // 1. The train worker, once its first checkpoint is in the database: killed.
        var killed: TrainWorker?
        try await PostgresNightlyTests.waitUntil("the train step has a checkpoint", timeout: Self.patience) {
            killed = try Self.trainWorker(queue, run) { try queue.checkpointPointer(job: $0.id) != nil }
            if let killed { kill(killed.pid, SIGKILL) }
            return killed != nil
        }
        // 2. The worker of the next attempt: paused past its lease, until another attempt runs, then let go.
        var paused: TrainWorker?
        try await PostgresNightlyTests.waitUntil("another train worker runs the step", timeout: Self.patience) {
            paused = try Self.trainWorker(queue, run) { $0.attempt > (killed?.attempt ?? 0) }
            if let paused { kill(paused.pid, SIGSTOP) }
            return paused != nil
        }
        try await PostgresNightlyTests.waitUntil("the paused worker's step runs elsewhere", timeout: Self.patience) {
            try Self.trainWorker(queue, run) { $0.attempt > (paused?.attempt ?? 0) } != nil
        }
        if let paused { kill(paused.pid, SIGCONT) }
        // 3. The host running the step now: its link cut past the lease, until the step runs on the other host
        // (rescued there), then brought back; its worker's late result must be refused.
        let cut = try #require(try Self.trainWorker(queue, run) { $0.attempt > (paused?.attempt ?? 0) })
        let cutHost = try #require(hosts.first { $0.runs(cut) }, "no host runs \(cut.owner)")
        let otherHost = try #require(hosts.first { !$0.runs(cut) })
        try cutHost.network.cut()
        try await PostgresNightlyTests.waitUntil("the cut host's step runs on the other host", timeout: Self.patience) {
            try Self.trainWorker(queue, run) { $0.attempt > cut.attempt }.map(otherHost.runs) == true
        }
        try await PostgresNightlyTests.waitUntil("the cut host says the database is unreachable", timeout: Self.patience) {
            cutHost.supervisor.stderr.contains("database unreachable")
        }
        try cutHost.network.restore()
        // 4. The server, while the train step runs: stopped at once and started again 2 s later.
        try await PostgresNightlyTests.waitUntil("the train step runs", timeout: Self.patience) {
            try Self.trainWorker(queue, run) != nil
        }
        try cluster.stopServer()
        try await Task.sleep(for: .seconds(2))
        try cluster.startServer()
        try queue.connection.reconnect()

        for host in hosts {
            #expect(try await blocking { host.supervisor.wait() } == 0, "\(host.supervisor.stderr)")
        }
        let stderr = hosts.map(\.supervisor.stderr).joined(separator: "\n")
        #expect(stderr.contains("restarting"), "the killed worker was not restarted")
        #expect(stderr.contains("lost the lease on \(trainJob) (attempt \(paused?.attempt ?? 0))"),
                "the paused worker's late result was not refused")
        let cutStderr = cutHost.supervisor.stderr
        #expect(cutStderr.contains("database reachable again"), "the cut host never said the database was back")
        #expect(cutStderr.contains("lost the lease on \(trainJob) (attempt \(cut.attempt))"),
                "the cut host's late result was not refused: \(cutStderr)")
        #expect(otherHost.supervisor.stderr.contains("database unreachable"), "no worker said it waited for the server")

        try PostgresNightlyTests.expectEachStepSucceededOnce(queue, run)
        let train = try #require(try queue.jobs(matching: .init(run: run, kind: "train")).first)
        #expect(train.attempt >= 4, "attempt \(train.attempt)")
        let outputs = try PostgresNightlyTests.outputs(queue, run)
        #expect(outputs["train"]?["adapter_digest"] == expected.adapter)
        #expect(outputs["eval"]?["gate"] == expected.gate)
        let versions = try queue.connection.scalar("SELECT count(*) FROM registry_versions WHERE lineage = 'logbook'").integerValue
        #expect(versions == 1, "the promote step registered \(versions ?? 0) versions")
    }
}
