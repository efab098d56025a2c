import AdaptCore
import Foundation
import JobQueue
import Storage
import Testing
import TestSupport
import WorkerRuntime

/// Two `adapt worker` processes as two hosts: each runs in a network namespace of its own, with a scratch
/// directory of its own, and reaches the PostgreSQL server only over its veth pair; a partition is worker A's
/// link taken down while it runs a job. Each test makes its own namespaces and cluster; serialized, since a
/// cluster start costs a few seconds of both cores.
@Suite(.serialized, .timeLimit(.minutes(Slowdown.minutes(3)))) struct PartitionedWorkerTests {
    let scratch = TemporaryDirectory("pg-partition-test")

    /// Both hosts, the server listening on their near ends, and a fresh database with one noop job of `sleep` ms.
    struct Hosts {
        let a: NetworkNamespace
        let b: NetworkNamespace
        let cluster: PostgresCluster
        let queue: PostgresJobQueue
        let job: JobID
        let database: String

        /// How a worker in `namespace` reaches the database. A write left unanswered for 2 s ends the connection
        /// (`tcp_user_timeout`) and a reconnect gives up after 2 s: every connection has such bounds, 10 s by
        /// default (`PostgresConnection.defaultSettings`), shortened here to keep the test short.
        func target(from namespace: NetworkNamespace) -> String {
            "postgresql://adapt@\(namespace.hostAddress):\(cluster.port)/\(database)?connect_timeout=2&tcp_user_timeout=2000"
        }
    }

    func hosts(sleep: Int) throws -> Hosts {
        let a = try NetworkNamespace(), b = try NetworkNamespace()
        let cluster = try PostgresCluster(alsoListeningOn: [a.hostAddress, b.hostAddress], trusting: [a.subnet, b.subnet])
        let local = try cluster.makeDatabase()
        let queue = try PostgresJobQueue(connectionString: local)
        let run = try queue.enqueue(RunDescription(kind: "noop", steps: [
            .init(name: "n1", kind: "noop", input: NoopJob.input(sleepMilliseconds: sleep)),
        ]))
        let database = try #require(URL(string: local)?.lastPathComponent)
        return Hosts(a: a, b: b, cluster: cluster, queue: queue, job: run.jobIDs[0], database: database)
    }

    /// Starts `adapt worker` for noop jobs in `namespace`, in a scratch directory of its own.
    func worker(_ label: String, in namespace: NetworkNamespace, of hosts: Hosts, leaseMilliseconds: Int) throws -> RunningProcess {
        let directory = scratch.file(label)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return try namespace.start(Executables.url("adapt"), [
            "--database", hosts.target(from: namespace), "worker", "--kinds", "noop",
            "--lease-ms", String(leaseMilliseconds), "--exit-when-idle", "--json",
        ], in: directory)
    }

    func waitUntil(_ what: String, timeout: Duration = .seconds(30), _ condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + Slowdown.scaled(timeout)
        while (try? condition()) != true {
            guard ContinuousClock.now < deadline else { Issue.record("timed out waiting until \(what)"); return }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Waits a bounded time for `process` to exit and returns its status (nil, recorded as an issue, if it did not).
    func exitStatus(_ label: String, _ process: RunningProcess) async throws -> Int32? {
        try await waitUntil("worker \(label) exits", timeout: .seconds(60)) { !process.isRunning }
        guard !process.isRunning else { return nil }
        return await process.exited()
    }

    func summary(_ process: RunningProcess) throws -> JSONValue {
        try JSON.decode(JSONValue.self, from: process.stdout, context: "worker stdout")
    }

    func succeededEvents(_ queue: PostgresJobQueue) throws -> Int {
        Int(try queue.connection.scalar("SELECT count(*) FROM job_events WHERE to_state = 'succeeded'").integerValue ?? -1)
    }

    /// Starts A, cuts its link as soon as it runs the job (well before the job ends), then starts B.
    func startBothAndCutA(_ hosts: Hosts, leaseOfA: Int) async throws -> (a: RunningProcess, b: RunningProcess) {
        let a = try worker("a", in: hosts.a, of: hosts, leaseMilliseconds: leaseOfA)
        try await waitUntil("A runs the job") { try hosts.queue.job(hosts.job).state == .running }
        try hosts.a.cut()
        let b = try worker("b", in: hosts.b, of: hosts, leaseMilliseconds: 30_000)
        return (a, b)
    }

    /// Both workers exit cleanly, and the job succeeded once, on `attempt`.
    func expectBothExitAndTheJobSucceededOnce(_ hosts: Hosts, _ a: RunningProcess, _ b: RunningProcess,
                                              attempt: Int) async throws {
        #expect(try await exitStatus("A", a) == 0, "\(a.stderr)")
        #expect(try await exitStatus("B", b) == 0, "\(b.stderr)")
        let job = try hosts.queue.job(hosts.job)
        #expect(job.state == .succeeded && job.attempt == attempt, "\(job.state) attempt \(job.attempt)")
        #expect(try succeededEvents(hosts.queue) == 1)
    }

    /// A's link is down for less than its lease, across the moment its job finishes: A says it is retrying,
    /// records the job once the link is back, and B never takes it.
    @Test func aWorkerCutOffForLessThanItsLeaseCompletesItsJobOnceWhenTheLinkReturns() async throws {
        let hosts = try hosts(sleep: 2_000)
        defer { try? hosts.cluster.stop() }
        let (a, b) = try await startBothAndCutA(hosts, leaseOfA: 30_000)
        try await waitUntil("A says it is retrying") { a.stderr.contains("database unreachable") }
        try hosts.a.restore()
        try await expectBothExitAndTheJobSucceededOnce(hosts, a, b, attempt: 1)
        #expect(try summary(a)["succeeded"]?.intValue == 1, "\(a.stdout)\n\(a.stderr)")
        #expect(try summary(b)["succeeded"]?.intValue == 0, "\(b.stdout)\n\(b.stderr)")
        let stderr = a.stderr
        #expect(stderr.components(separatedBy: "database unreachable").count == 2, "said once per outage: \(stderr)")
        #expect(stderr.contains("database reachable again"), "\(stderr)")
    }

    /// A's link is down longer than a connection waits for an answer (2 s here) but shorter than A's lease, while
    /// its job runs without writing: the heartbeat meets the broken connection, says so, reconnects once the link
    /// is back and extends the lease in time, so the job succeeds on its first attempt. The cut is not scaled by
    /// `Slowdown`: it must stay shorter than the lease.
    @Test func aWorkerWhoseHeartbeatMeetsACutLinkReconnectsAndKeepsItsLease() async throws {
        let hosts = try hosts(sleep: 12_000)
        defer { try? hosts.cluster.stop() }
        // Heartbeats every 3 s: the first after the cut fails at about 5 s, the lease would end at 9 s.
        let a = try worker("a", in: hosts.a, of: hosts, leaseMilliseconds: 9_000)
        try await waitUntil("A runs the job") { try hosts.queue.job(hosts.job).state == .running }
        try hosts.a.cut()
        try await Task.sleep(for: .seconds(6))
        try hosts.a.restore()
        #expect(try await exitStatus("A", a) == 0, "\(a.stderr)")
        let job = try hosts.queue.job(hosts.job)
        #expect(job.state == .succeeded && job.attempt == 1, "\(job.state) attempt \(job.attempt)\n\(a.stderr)")
        #expect(try summary(a)["lease_lost"]?.intValue == 0, "\(a.stdout)\n\(a.stderr)")
        #expect(try summary(a)["succeeded"]?.intValue == 1, "\(a.stdout)\n\(a.stderr)")
        let stderr = a.stderr
        #expect(stderr.contains("database unreachable"), "\(stderr)")
        #expect(stderr.contains("database reachable again"), "\(stderr)")
    }

    /// A's link is down past its lease: the job is rescued and runs on B; when the link is back, A's late
    /// result is refused by the fence and A says so; the job succeeded once, by B.
    @Test func aWorkerCutOffPastItsLeaseIsFencedAndItsJobRunsOnTheOtherHost() async throws {
        let hosts = try hosts(sleep: 3_000)
        defer { try? hosts.cluster.stop() }
        let (a, b) = try await startBothAndCutA(hosts, leaseOfA: 2_000)
        try await waitUntil("B has run the job", timeout: .seconds(60)) {
            try hosts.queue.job(hosts.job).state == .succeeded
        }
        try hosts.a.restore()
        try await expectBothExitAndTheJobSucceededOnce(hosts, a, b, attempt: 2)
        #expect(try summary(a)["lease_lost"]?.intValue == 1, "\(a.stdout)\n\(a.stderr)")
        #expect(try summary(a)["succeeded"]?.intValue == 0, "\(a.stdout)\n\(a.stderr)")
        #expect(try summary(b)["succeeded"]?.intValue == 1, "\(b.stdout)\n\(b.stderr)")
        #expect(a.stderr.contains("database unreachable"), "\(a.stderr)")
        #expect(a.stderr.contains("lost the lease on \(hosts.job)"), "\(a.stderr)")
    }
}
