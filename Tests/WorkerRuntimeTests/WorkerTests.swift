import AdaptCore
import Foundation
import JobQueue
import Storage
import Synchronization
import WorkerRuntime
import Testing
import TestSupport

/// The worker loop in this process, on the real clock; multi-process behaviour is in MultiProcessTests.
@Suite struct WorkerTests {
    let directory = TemporaryDirectory("worker-test")
    var path: String { directory.file("adapt.sqlite").path }

    /// Another connection to the same database, as another process would have.
    func connection(retry: RetryPolicy = .standard) throws -> JobQueue {
        try JobQueue(database: try Database(path: path, durability: .normal), retryPolicy: retry)
    }

    func noops(_ count: Int, sleep: Int = 0, chain: Bool = false) -> RunDescription {
        RunDescription(kind: "noop", steps: (1...count).map {
            .init(name: "n\($0)", kind: "noop", input: NoopJob.input(sleepMilliseconds: sleep),
                  dependsOn: chain && $0 > 1 ? ["n\($0 - 1)"] : [])
        })
    }

    func waitUntil(_ timeout: Duration = .seconds(10), _ condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while try !condition() {
            if ContinuousClock.now > deadline { Issue.record("timed out"); return }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    @Test func workerRunsAChainInOrderAndExitsWhenIdle() async throws {
        let queue = try connection()
        let run = try queue.enqueue(noops(5, chain: true))
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"], exitWhenIdle: true), body: NoopJob.body)
        let summary = try await worker.run()
        #expect(summary.succeeded == 5)
        let starts = try queue.events(run: run.runID).filter { $0.to == .running }.map(\.jobID)
        #expect(starts == run.jobIDs)
    }

    /// A database written before run_at was bounded may hold a job due in a billion years; waiting for it
    /// must neither overflow nor keep the worker from other work.
    @Test func aJobDueFarInTheFutureDoesNotStopTheWorkerFromOtherWork() async throws {
        let queue = try connection()
        let later = try queue.enqueue(RunDescription(kind: "noop", steps: [.init(name: "later", kind: "noop")]))
        let raw = try Database(path: path, durability: .normal)
        try raw.run("UPDATE jobs SET run_at = ? WHERE id = ?", Int64.max / 2, later.jobIDs[0].value)
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"]), body: NoopJob.body)
        let running = Task { try await worker.run() }
        try await Task.sleep(for: .milliseconds(50))
        let now = try connection().enqueue(noops(1))
        try await waitUntil { try queue.job(now.jobIDs[0]).state == .succeeded }
        #expect(try queue.job(later.jobIDs[0]).state == .ready)
        worker.requestStop()
        _ = try await running.value
    }

    @Test func aThrowingBodyIsRetriedUntilItSucceeds() async throws {
        let queue = try connection(retry: RetryPolicy(baseMilliseconds: 5, capMilliseconds: 20))
        let run = try queue.enqueue(RunDescription(kind: "t", steps: [.init(name: "a", kind: "flaky", maxAttempts: 3)]))
        struct Flaky: Error, CustomStringConvertible { var description: String { "flaky failure" } }
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["flaky"], exitWhenIdle: true)) { claim, _ in
            if claim.attempt < 3 { throw Flaky() }
            return .completed(.int(claim.attempt))
        }
        let summary = try await worker.run()
        #expect(summary.failed == 2 && summary.succeeded == 1)
        let job = try queue.job(run.jobIDs[0])
        #expect(job.state == .succeeded && job.output == .int(3))
        #expect(try queue.events(job: job.id).filter { $0.to == .failed }.allSatisfy { $0.message?.contains("flaky failure") == true })
    }

    @Test func anIdleWorkerStartsNewWorkWithinAFewMilliseconds() async throws {
        let workerQueue = try connection()
        let worker = Worker(queue: workerQueue, options: WorkerOptions(kinds: ["noop"]), body: NoopJob.body)
        let running = Task { try await worker.run() }
        let producer = try connection()
        try await Task.sleep(for: .milliseconds(50))
        var latencies: [Int64] = []
        for _ in 0..<20 {
            let run = try producer.enqueue(noops(1))
            try await waitUntil { try producer.job(run.jobIDs[0]).state == .succeeded }
            let events = try producer.events(job: run.jobIDs[0])
            let created = try #require(events.first { $0.from == nil }?.at)
            let started = try #require(events.first { $0.to == .running }?.at)
            latencies.append(started - created)
            try await Task.sleep(for: .milliseconds(5))
        }
        worker.requestStop()
        _ = try await running.value
        latencies.sort()
        // DESIGN.md asks for a few milliseconds; the bound leaves room for a loaded 2-core machine.
        #expect(latencies[latencies.count / 2] <= 10, "enqueue→start latencies (ms): \(latencies)")
    }

    @Test func aStopRequestLetsTheRunningJobFinish() async throws {
        let queue = try connection()
        let run = try queue.enqueue(noops(2, sleep: 300))
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"]), body: NoopJob.body)
        let running = Task { try await worker.run() }
        try await waitUntil { try queue.job(run.jobIDs[0]).state == .running }
        worker.requestStop()
        let summary = try await running.value
        #expect(summary.succeeded == 1 && summary.released == 0)
        #expect(try queue.job(run.jobIDs[0]).state == .succeeded)
        #expect(try queue.job(run.jobIDs[1]).state == .ready)
    }

    @Test func aSecondStopRequestReleasesTheRunningJobAtOnce() async throws {
        let queue = try connection()
        let run = try queue.enqueue(noops(1, sleep: 60_000))
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"]), body: NoopJob.body)
        let started = ContinuousClock.now
        let running = Task { try await worker.run() }
        try await waitUntil { try queue.job(run.jobIDs[0]).state == .running }
        worker.requestStop()
        worker.requestStop()
        let summary = try await running.value
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(summary.released == 1)
        let job = try queue.job(run.jobIDs[0])
        #expect(job.state == .ready && job.maxAttempts == RunDescription.defaultMaxAttempts + 1)
    }

    @Test func cancellingTheRunStopsTheBodyAtItsNextHeartbeat() async throws {
        let queue = try connection()
        let run = try queue.enqueue(noops(1, sleep: 60_000))
        let seen = Mutex(false)
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"], leaseMilliseconds: 300, exitWhenIdle: true)) { claim, context in
            do { return try await NoopJob.body(claim, context) } catch {
                seen.withLock { $0 = context.isRunCancelled }
                throw error
            }
        }
        let running = Task { try await worker.run() }
        try await waitUntil { try queue.job(run.jobIDs[0]).state == .running }
        let cancelledAt = ContinuousClock.now
        try connection().cancel(run: run.runID)
        let summary = try await running.value
        // The body would sleep 60 s; ending far sooner proves the heartbeat delivered the cancellation. The bound
        // is loose because the heartbeat thread may be starved on a loaded machine.
        #expect(ContinuousClock.now - cancelledAt < .seconds(20))
        #expect(summary.cancelled == 1 && seen.withLock { $0 })
        #expect(try queue.job(run.jobIDs[0]).state == .cancelled)
    }

    @Test func aJobWithAShortLeaseOfItsOwnIsKeptAliveByHeartbeatsAtItsOwnPace() async throws {
        let queue = try connection()
        // The worker's default lease (60 s) would never need a heartbeat in 1.2 s; the job's 300 ms needs four.
        let run = try queue.enqueue(RunDescription(kind: "noop", steps: [
            .init(name: "a", kind: "noop", input: NoopJob.input(sleepMilliseconds: 1_200), leaseMilliseconds: 300)]))
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"], leaseMilliseconds: 60_000, exitWhenIdle: true),
                            body: NoopJob.body)
        let summary = try await worker.run()
        #expect(summary.succeeded == 1 && summary.leaseLost == 0)
        let job = try queue.job(run.jobIDs[0])
        #expect(job.state == .succeeded && job.attempt == 1)
        let heartbeat = try #require(try queue.database.queryOne("SELECT heartbeat_at, created_at FROM jobs WHERE id = ?", run.jobIDs[0]))
        #expect((heartbeat.int64("heartbeat_at") ?? 0) - (heartbeat.int64("created_at") ?? 0) >= 900, "the lease was extended")
    }

    @Test func theBodyReportsProgressAsEvents() async throws {
        let queue = try connection()
        let run = try queue.enqueue(RunDescription(kind: "t", steps: [.init(name: "a", kind: "train")]))
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["train"], exitWhenIdle: true)) { _, context in
            for step in [10, 20] { try context.progress("step \(step)") }
            return .completed(.object([:]))
        }
        _ = try await worker.run()
        let notes = try queue.events(job: run.jobIDs[0]).filter { $0.from == $0.to }.compactMap(\.message)
        #expect(notes == ["step 10", "step 20"])
    }

    @Test func aWorkerWithConcurrencyThreeRunsThreeJobsAtOnce() async throws {
        let queue = try connection()
        let run = try queue.enqueue(noops(3, sleep: 400))
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"], concurrency: 3, exitWhenIdle: true),
                            body: NoopJob.body)
        let summary = try await worker.run()
        #expect(summary.succeeded == 3)
        let events = try queue.events(run: run.runID)
        let lastStart = try #require(events.filter { $0.to == .running }.map(\.at).max())
        let firstEnd = try #require(events.filter { $0.to == .succeeded }.map(\.at).min())
        #expect(lastStart < firstEnd, "the three jobs overlapped")
    }

    @Test func jobsFinishingTogetherShareOneCommit() async throws {
        let queue = try connection()
        // Jobs of 5 ms, so that the eight slots are all busy at once however the machine schedules them.
        let run = try queue.enqueue(noops(64, sleep: 5))
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"], concurrency: 8, exitWhenIdle: true),
                            body: NoopJob.body)
        let summary = try await worker.run()
        #expect(summary.succeeded == 64)
        #expect(summary.commits <= 32, "\(summary.commits) commits for 64 jobs run eight at a time")
        #expect(try queue.jobs(matching: .init(run: run.runID)).allSatisfy { $0.state == .succeeded })
        let succeeded = try queue.events(run: run.runID).filter { $0.to == .succeeded }
        #expect(Set(succeeded.map(\.jobID)) == Set(run.jobIDs) && succeeded.count == 64, "each succeeded exactly once")
    }

    @Test func aLoneWorkerSlotCommitsEachJobAsItFinishes() async throws {
        let queue = try connection()
        try queue.enqueue(noops(10))
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"], exitWhenIdle: true), body: NoopJob.body)
        let summary = try await worker.run()
        #expect(summary.succeeded == 10 && summary.commits == 10)
    }
}
