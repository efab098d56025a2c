import AdaptCore
import Foundation
import JobQueue
import Storage
import Testing
import TestSupport
import WorkerRuntime

/// The worker loop on PostgreSQL: group commit and the LISTEN/NOTIFY idle wait in this process, and a real
/// `adapt worker --database postgres://…` process riding out a server restart. Each test has a cluster of its own
/// where it stops the server; serialized, since a cluster start costs a few seconds of both cores.
@Suite(.serialized, .timeLimit(.minutes(Slowdown.minutes(3)))) struct PostgresWorkerTests {
    let directory = TemporaryDirectory("pg-worker-test")

    func noops(_ count: Int, sleep: Int = 0) -> RunDescription {
        RunDescription(kind: "noop", steps: (1...count).map {
            .init(name: "n\($0)", kind: "noop", input: NoopJob.input(sleepMilliseconds: sleep))
        })
    }

    func waitUntil(_ what: String, timeout: Duration = .seconds(30), _ condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + Slowdown.scaled(timeout)
        while (try? condition()) != true {
            guard ContinuousClock.now < deadline else { Issue.record("timed out waiting until \(what)"); return }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    func count(_ engine: PostgresJobQueue, _ sql: String) throws -> Int {
        Int(try engine.connection.scalar(sql).integerValue ?? -1)
    }

    @Test func slotsSharingCommitsDrainEveryJobExactlyOnce() async throws {
        let target = try PostgresCluster.shared().makeDatabase()
        let queue = try PostgresJobQueue(connectionString: target)
        try queue.enqueue(noops(300, sleep: 1))
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"], concurrency: 4, exitWhenIdle: true),
                            body: NoopJob.body)
        let summary = try await worker.run()
        #expect(summary.succeeded == 300)
        #expect(summary.commits <= 300)
        #expect(try count(queue, "SELECT count(*) FROM jobs WHERE state = 'succeeded' AND attempt = 1") == 300)
        #expect(try count(queue, "SELECT count(*) FROM job_events WHERE to_state = 'succeeded'") == 300)
    }

    @Test func anIdleWorkerStartsAJobEnqueuedByAnotherHostWithinMilliseconds() async throws {
        let target = try PostgresCluster.shared().makeDatabase()
        let queue = try PostgresJobQueue(connectionString: target)
        let other = try PostgresJobQueue(connectionString: target)
        let started = LockedBox<[Int]>([])
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"])) { claim, _ in
            started.update { $0.append(Int(claim.jobID.value)) }
            return .completed(.null)
        }
        let running = Task { try await worker.run() }
        var waits: [Double] = []
        for round in 1...10 {
            try await Task.sleep(for: .milliseconds(30))
            let enqueued = DispatchTime.now().uptimeNanoseconds
            try other.enqueue(RunDescription(kind: "noop", steps: [.init(name: "n", kind: "noop")]))
            try await waitUntil("job \(round) started", timeout: .seconds(5)) { started.get().count == round }
            waits.append(Double(DispatchTime.now().uptimeNanoseconds - enqueued) / 1e6)
        }
        worker.requestStop()
        _ = try await running.value
        let median = waits.sorted()[waits.count / 2]
        print("PostgreSQL worker: enqueue on another connection → start, median \(String(format: "%.2f", median)) ms")
        #expect(median < 100, "woken by the notification, not by a timeout: \(waits)")
    }

    /// One notification wakes one slot; that slot claims for its idle siblings too and hands them the jobs, so a
    /// backlog arriving at once runs on every slot at once.
    @Test func aBacklogArrivingAtAnIdleWorkerRunsOnEverySlotAtOnce() async throws {
        let target = try PostgresCluster.shared().makeDatabase()
        let queue = try PostgresJobQueue(connectionString: target)
        let other = try PostgresJobQueue(connectionString: target)
        let running = LockedBox(0)
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"], concurrency: 4)) { _, _ in
            running.update { $0 += 1 }
            // Each body waits for the other three to be running beside it.
            let deadline = ContinuousClock.now + .seconds(5)
            while running.get() < 4 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
            return .completed(.int(running.get()))
        }
        let loop = Task { try await worker.run() }
        try await Task.sleep(for: .milliseconds(200))
        try other.enqueue(noops(4))
        try await waitUntil("the four jobs finished") {
            try count(other, "SELECT count(*) FROM jobs WHERE state = 'succeeded'") == 4
        }
        worker.requestStop()
        _ = try await loop.value
        #expect(try count(other, "SELECT count(*) FROM jobs WHERE output = '4'") == 4, "every job ran beside the other three")
    }

    /// Finishing jobs are not notified on PostgreSQL; a worker told to exit when idle still notices that the job
    /// another host ran has finished, rather than waiting for that job's lease to run out.
    /// A noop worker with `concurrency` slots running on a new database, and a second engine on it (`other`) to
    /// enqueue and look with.
    func runningNoopWorker(concurrency: Int) throws
        -> (worker: Worker<PostgresJobQueue>, running: Task<WorkerSummary, any Error>, other: PostgresJobQueue) {
        let target = try PostgresCluster.shared().makeDatabase()
        let worker = Worker(queue: try PostgresJobQueue(connectionString: target),
                            options: WorkerOptions(kinds: ["noop"], concurrency: concurrency), body: NoopJob.body)
        return (worker, Task { try await worker.run() }, try PostgresJobQueue(connectionString: target))
    }

    /// An idle worker offers its slots; an enqueue leases the job to it in its own transaction, and the worker
    /// starts it without claiming. Stopping withdraws the offer.
    @Test func anIdleWorkerStartsAJobHandedToItWithoutAClaimOfItsOwn() async throws {
        let (worker, running, other) = try runningNoopWorker(concurrency: 2)
        try await waitUntil("both slots offered") { try count(other, "SELECT free_slots FROM job_waiters") == 2 }
        let id = try other.enqueue(noops(1)).jobIDs[0]
        try await waitUntil("the job ran") { try other.job(id).state == .succeeded }
        #expect(try other.events(job: id).map(\.message).contains("claimed by \(worker.options.owner) at enqueue"))
        worker.requestStop()
        let summary = try await running.value
        #expect(summary.succeeded == 1)
        try await waitUntil("the offer withdrawn", timeout: .seconds(5)) { try count(other, "SELECT count(*) FROM job_waiters") == 0 }
    }

    /// A slot that finishes a handed job is offered again: jobs arriving one by one, each after the last ran, are
    /// all handed over, however many more of them there are than slots.
    @Test func aWorkerKeepsTakingHandedJobsLongAfterItsSlotsWereFirstOffered() async throws {
        let (worker, running, other) = try runningNoopWorker(concurrency: 2)
        for _ in 1...6 {
            try await waitUntil("both slots offered") { try count(other, "SELECT free_slots FROM job_waiters") == 2 }
            let id = try other.enqueue(noops(1)).jobIDs[0]
            try await waitUntil("the job ran") { try other.job(id).state == .succeeded }
            #expect(try other.events(job: id).map(\.message).contains("claimed by \(worker.options.owner) at enqueue"))
        }
        worker.requestStop()
        #expect(try await running.value.succeeded == 6)
    }

    /// The offer can be a moment behind the slots: a job handed when none is free any more goes back at once
    /// and runs once a slot frees.
    @Test func aJobHandedWhenNoSlotIsFreeIsReleasedAndRunsLater() async throws {
        let (worker, running, other) = try runningNoopWorker(concurrency: 1)
        try await waitUntil("the slot offered") { try count(other, "SELECT free_slots FROM job_waiters") == 1 }
        let long = try other.enqueue(noops(1, sleep: 1_000)).jobIDs[0]
        try await waitUntil("the long job running") { try other.job(long).state == .running }
        #expect(try count(other, "SELECT free_slots FROM job_waiters") == 0, "the enqueue took the slot on offer")
        // A stale offer, as if written just before the slot took the long job.
        try other.connection.run("UPDATE job_waiters SET free_slots = 1")
        let late = try other.enqueue(noops(1)).jobIDs[0]
        try await waitUntil("both jobs ran") { try other.job(long).state == .succeeded && other.job(late).state == .succeeded }
        let notes = try other.events(job: late).map(\.message)
        #expect(notes.contains("released: handed to \(worker.options.owner) when no slot of it was free"), "\(notes)")
        worker.requestStop()
        _ = try await running.value
    }

    @Test func aWorkerExitingWhenIdleLeavesSoonAfterTheLastJobElsewhereFinishes() async throws {
        let target = try PostgresCluster.shared().makeDatabase()
        let queue = try PostgresJobQueue(connectionString: target)
        let other = try PostgresJobQueue(connectionString: target)
        try queue.enqueue(noops(1))
        let held = try #require(try other.claim(kinds: ["noop"], owner: "elsewhere", leaseMilliseconds: 600_000))
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"], exitWhenIdle: true), body: NoopJob.body)
        let running = Task { try await worker.run() }
        try await Task.sleep(for: .milliseconds(300))
        try other.complete(held, output: .null)
        let finished = ContinuousClock.now
        _ = try await running.value
        let waited = ContinuousClock.now - finished
        #expect(waited < Slowdown.scaled(.seconds(5)), "left \(waited) after the last job finished")
    }

    @Test func aCompletionHookWritesInTheCompletionsTransactionOnPostgres() async throws {
        let target = try PostgresCluster.shared().makeDatabase()
        let queue = try PostgresJobQueue(connectionString: target)
        try queue.connection.execute("CREATE TABLE hook_writes (job BIGINT PRIMARY KEY)")
        let run = try queue.enqueue(noops(2))
        // The first job's hook writes a row and succeeds; the second's writes one, then refuses: neither its row
        // nor its completion may be recorded.
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"], exitWhenIdle: true)) { claim, _ in
            .completed(.null, alsoInTransaction: { connection in
                #expect(connection.dialect == .postgres)
                try connection.run("INSERT INTO hook_writes (job) VALUES (?)", claim.jobID)
                if claim.jobID == run.jobIDs[1], claim.attempt == 1 { throw CancellationError() }
            })
        }
        let summary = try await worker.run()
        #expect(summary.succeeded == 2 && summary.failed == 1)
        let rows = try queue.connection.query("SELECT job FROM hook_writes ORDER BY job").compactMap { $0.int64("job") }
        #expect(rows == run.jobIDs.map(\.value))
        #expect(try queue.job(run.jobIDs[1]).attempt == 2)
    }

    /// Starts an `adapt worker` process on a cluster of its own with one noop job of `sleep` ms, stops the server
    /// (`-m immediate`) once the job runs, starts it again 3 s later, and returns once the worker exited. The
    /// caller stops the cluster.
    func workerThroughARestart(_ cluster: PostgresCluster, leaseMilliseconds: Int,
                               sleep: Int) async throws -> (worker: RunningProcess, queue: PostgresJobQueue, job: JobID) {
        let target = try cluster.makeDatabase()
        let queue = try PostgresJobQueue(connectionString: target)
        let run = try queue.enqueue(noops(1, sleep: sleep))
        let worker = try Executables.start("adapt", ["--database", target, "worker", "--kinds", "noop", "--lease-ms",
                                                     String(leaseMilliseconds), "--exit-when-idle", "--json"],
                                           outputIn: directory.url)
        try await waitUntil("the job runs") { try queue.job(run.jobIDs[0]).state == .running }
        try cluster.stopServer()
        try await Task.sleep(for: .seconds(3))
        try cluster.startServer()
        let status = await worker.exited()
        #expect(status == 0, "\(worker.stderr)")
        try queue.connection.reconnect()
        return (worker, queue, run.jobIDs[0])
    }

    /// The server is away for less than the job's lease: the worker says it is retrying, reconnects, and records
    /// the job once.
    @Test func aWorkerProcessRidesOutAServerRestartAndCompletesItsJobOnce() async throws {
        let cluster = try PostgresCluster()
        defer { try? cluster.stop() }
        let (worker, queue, id) = try await workerThroughARestart(cluster, leaseMilliseconds: 30_000, sleep: 1_500)
        let job = try queue.job(id)
        #expect(job.state == .succeeded && job.attempt == 1, "\(job.state) attempt \(job.attempt)")
        #expect(try count(queue, "SELECT count(*) FROM job_events WHERE to_state = 'succeeded'") == 1)
        let stderr = worker.stderr
        #expect(stderr.components(separatedBy: "database unreachable").count == 2, "said once per outage: \(stderr)")
        #expect(stderr.contains("database reachable again"), "\(stderr)")
    }

    /// The server is away past the job's lease: when it is back, the job is rescued and the worker's late
    /// result is refused by the fence (`lease_lost`); the job then runs again and succeeds once.
    @Test func aResultWhoseLeaseRanOutDuringTheOutageIsNotRecorded() async throws {
        let cluster = try PostgresCluster()
        defer { try? cluster.stop() }
        let (worker, queue, id) = try await workerThroughARestart(cluster, leaseMilliseconds: 900, sleep: 1_000)
        let summary = try JSON.decode(JSONValue.self, from: worker.stdout, context: "worker stdout")
        #expect(summary["lease_lost"]?.intValue == 1, "\(worker.stdout)\n\(worker.stderr)")
        let job = try queue.job(id)
        #expect(job.state == .succeeded && job.attempt == 2, "\(job.state) attempt \(job.attempt)")
        #expect(try count(queue, "SELECT count(*) FROM job_events WHERE to_state = 'succeeded'") == 1)
    }
}
