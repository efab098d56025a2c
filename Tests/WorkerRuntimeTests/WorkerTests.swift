import AdaptCore
import Foundation
import JobQueue
import Storage
import Testing
import TestSupport
import WorkerRuntime

/// The worker loop in this process. Tests of what a job's attempt does turn the loop one job at a time
/// (`runOnce`) on a manual clock, so nothing in them waits for time to pass; tests of `run` (slots, stopping,
/// group commit, the idle wait) use bodies that wait for each other rather than for a number of milliseconds.
/// Multi-process behaviour is in MultiProcessTests.
@Suite(.timeLimit(.minutes(Slowdown.minutes(1)))) struct WorkerTests {
    let directory = TemporaryDirectory("worker-test")
    let clock = ManualClock()
    var path: String { directory.file("adapt.sqlite").path }

    /// Another connection to the same database, as another process would have, on the real clock.
    func connection(retry: RetryPolicy = .standard) throws -> JobQueue {
        try JobQueue(database: try Database(path: path, durability: .normal), retryPolicy: retry)
    }

    /// A connection on this test's manual clock.
    func manualConnection(retry: RetryPolicy = .standard) throws -> JobQueue {
        try JobQueue(database: try Database(path: path, durability: .normal), clock: clock, retryPolicy: retry)
    }

    func noops(_ count: Int, sleep: Int = 0, chain: Bool = false) -> RunDescription {
        RunDescription(kind: "noop", steps: (1...count).map {
            .init(name: "n\($0)", kind: "noop", input: NoopJob.input(sleepMilliseconds: sleep),
                  dependsOn: chain && $0 > 1 ? ["n\($0 - 1)"] : [])
        })
    }

    func waitUntil(_ timeout: Duration = .seconds(20), _ condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + Slowdown.scaled(timeout)
        while try !condition() {
            if ContinuousClock.now > deadline { Issue.record("timed out"); return }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    // MARK: One turn at a time, on a manual clock

    @Test func eachTurnRunsOneJobOfTheChainInOrderThenReportsIdle() async throws {
        let queue = try manualConnection()
        let run = try queue.enqueue(noops(3, chain: true))
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"]), body: NoopJob.body)
        for id in run.jobIDs {
            #expect(try await worker.runOnce() == .ran(id, .succeeded))
        }
        #expect(try await worker.runOnce() == .idle(nextWakeAt: nil))
        #expect(try queue.jobs(matching: .init(run: run.runID)).allSatisfy { $0.state == .succeeded })
    }

    /// A database written before run_at was bounded may hold a job due in a billion years: it must not keep
    /// the worker from other work, and the idle turn names it as the next thing due.
    @Test func aJobDueFarInTheFutureDoesNotStopTheWorkerFromOtherWork() async throws {
        let queue = try manualConnection()
        let later = try queue.enqueue(RunDescription(kind: "noop", steps: [.init(name: "later", kind: "noop")]))
        try queue.database.run("UPDATE jobs SET run_at = ? WHERE id = ?", Int64.max / 2, later.jobIDs[0].value)
        let now = try queue.enqueue(noops(1))
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"]), body: NoopJob.body)
        #expect(try await worker.runOnce() == .ran(now.jobIDs[0], .succeeded))
        #expect(try await worker.runOnce() == .idle(nextWakeAt: Int64.max / 2))
        #expect(try queue.job(later.jobIDs[0]).state == .ready)
    }

    @Test func aThrowingBodyIsRetriedAfterItsBackoffUntilItSucceeds() async throws {
        let queue = try manualConnection(retry: RetryPolicy(baseMilliseconds: 1_000, capMilliseconds: 8_000))
        let run = try queue.enqueue(RunDescription(kind: "t", steps: [.init(name: "a", kind: "flaky", maxAttempts: 3)]))
        let id = run.jobIDs[0]
        struct Flaky: Error, CustomStringConvertible { var description: String { "flaky failure" } }
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["flaky"])) { claim, _ in
            if claim.attempt < 3 { throw Flaky() }
            return .completed(.int(claim.attempt))
        }
        for attempt in 1...2 {
            #expect(try await worker.runOnce() == .ran(id, .failed))
            let retryAt = try queue.job(id).runAt
            #expect(retryAt > clock.nowMilliseconds(), "attempt \(attempt) waits for its backoff")
            #expect(try await worker.runOnce() == .idle(nextWakeAt: retryAt))
            clock.set(retryAt)
        }
        #expect(try await worker.runOnce() == .ran(id, .succeeded))
        let job = try queue.job(id)
        #expect(job.state == .succeeded && job.output == .int(3))
        #expect(try queue.events(job: id).filter { $0.to == .failed }.allSatisfy { $0.message?.contains("flaky failure") == true })
    }

    @Test func aLeaseThatExpiredIsRescuedAndItsJobRunByTheNextTurn() async throws {
        let queue = try manualConnection()
        let run = try queue.enqueue(noops(1))
        let lost = try #require(try queue.claim(kinds: ["noop"], owner: "gone", leaseMilliseconds: 1_000))
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"]), body: NoopJob.body)
        #expect(try await worker.runOnce() == .idle(nextWakeAt: lost.leaseExpiresAt + 1))
        clock.set(lost.leaseExpiresAt + 1)
        #expect(try await worker.runOnce() == .ran(run.jobIDs[0], .succeeded))
        #expect(try queue.job(run.jobIDs[0]).attempt == 2)
    }

    @Test func cancellingTheRunStopsTheBodyAtItsNextHeartbeat() async throws {
        let queue = try manualConnection()
        let run = try queue.enqueue(noops(1))
        let started = Signal()
        let sawCancellation = Locked(false)
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"], leaseMilliseconds: 300)) { _, context in
            started.fire()
            do { try await Task.sleep(for: .seconds(3_600)) } catch {
                sawCancellation.withLock { $0 = context.isRunCancelled }
                throw error
            }
            return .completed(.null)
        }
        let turn = Task { try await worker.runOnce() }
        await started.wait()
        try queue.cancel(run: run.runID)
        worker.beatDueLeases()  // none is due before a third of the lease
        #expect(try queue.job(run.jobIDs[0]).state == .running)
        clock.advance(milliseconds: 100)
        worker.beatDueLeases()
        #expect(try await turn.value == .ran(run.jobIDs[0], .cancelled))
        #expect(sawCancellation.withLock { $0 })
        #expect(try queue.job(run.jobIDs[0]).state == .cancelled)
    }

    @Test func aJobWithAShortLeaseOfItsOwnIsKeptAliveByHeartbeatsAtItsOwnPace() async throws {
        let queue = try manualConnection()
        // The worker's lease (60 s) would need no heartbeat in 1.2 s; the job's own 300 ms needs one every 100 ms.
        let run = try queue.enqueue(RunDescription(kind: "noop", steps: [
            .init(name: "a", kind: "noop", leaseMilliseconds: 300)]))
        let id = run.jobIDs[0]
        let started = Signal(), finish = Signal()
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"], leaseMilliseconds: 60_000)) { _, _ in
            started.fire()
            await finish.wait()
            return .completed(.null)
        }
        let turn = Task { try await worker.runOnce() }
        await started.wait()
        func lease() throws -> Int64? {
            try queue.database.queryOne("SELECT lease_expires_at FROM jobs WHERE id = ?", id)?.int64("lease_expires_at")
        }
        #expect(try lease() == clock.nowMilliseconds() + 300)
        for _ in 0..<12 {
            clock.advance(milliseconds: 99)
            worker.beatDueLeases()
            clock.advance(milliseconds: 1)
            worker.beatDueLeases()
            #expect(try lease() == clock.nowMilliseconds() + 300, "extended by the job's own lease, every third of it")
        }
        finish.fire()
        #expect(try await turn.value == .ran(id, .succeeded))
        #expect(try queue.job(id).attempt == 1)
    }

    @Test func theBodyReportsProgressAsEvents() async throws {
        let queue = try manualConnection()
        let run = try queue.enqueue(RunDescription(kind: "t", steps: [.init(name: "a", kind: "train")]))
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["train"])) { _, context in
            for step in [10, 20] { try context.progress("step \(step)") }
            return .completed(.object([:]))
        }
        #expect(try await worker.runOnce() == .ran(run.jobIDs[0], .succeeded))
        let notes = try queue.events(job: run.jobIDs[0]).filter { $0.from == $0.to }.compactMap(\.message)
        #expect(notes == ["step 10", "step 20"])
    }

    @Test func aStoppingWorkerClaimsNothing() async throws {
        let queue = try manualConnection()
        let run = try queue.enqueue(noops(1))
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"]), body: NoopJob.body)
        worker.requestStop()
        #expect(try await worker.runOnce() == .stopping)
        #expect(try queue.job(run.jobIDs[0]).state == .ready)
    }

    // MARK: The running loop

    @Test func workerRunsAChainInOrderAndExitsWhenIdle() async throws {
        let queue = try connection()
        let run = try queue.enqueue(noops(5, chain: true))
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"], exitWhenIdle: true), body: NoopJob.body)
        let summary = try await worker.run()
        #expect(summary.succeeded == 5)
        let starts = try queue.events(run: run.runID).filter { $0.to == .running }.map(\.jobID)
        #expect(starts == run.jobIDs)
    }

    /// The clock never moves, so no timer can fire: only the notice of another connection's commit can start
    /// the job. (How soon is a benchmark's business: `scripts/bench/queue`, BENCHMARKS.md.)
    @Test func anIdleWorkerIsWokenByAnotherConnectionsCommit() async throws {
        let queue = try manualConnection()
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"]), body: NoopJob.body)
        let running = Task { try await worker.run() }
        let producer = try manualConnection()
        for _ in 0..<3 {
            let run = try producer.enqueue(noops(1))
            try await waitUntil { try producer.job(run.jobIDs[0]).state == .succeeded }
        }
        worker.requestStop()
        #expect(try await running.value.succeeded == 3)
    }

    @Test func aStopRequestLetsTheRunningJobFinish() async throws {
        let queue = try connection()
        let run = try queue.enqueue(noops(2))
        let started = Signal(), finish = Signal()
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"])) { _, _ in
            started.fire()
            await finish.wait()
            return .completed(.null)
        }
        let running = Task { try await worker.run() }
        await started.wait()
        worker.requestStop()
        finish.fire()
        let summary = try await running.value
        #expect(summary.succeeded == 1 && summary.released == 0)
        #expect(try queue.job(run.jobIDs[0]).state == .succeeded)
        #expect(try queue.job(run.jobIDs[1]).state == .ready)
    }

    /// The body would wait an hour: the suite's time limit fails the test if the release does not interrupt it.
    @Test func aSecondStopRequestReleasesTheRunningJobAtOnce() async throws {
        let queue = try connection()
        let run = try queue.enqueue(noops(1))
        let started = Signal()
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"])) { _, _ in
            started.fire()
            try await Task.sleep(for: .seconds(3_600))
            return .completed(.null)
        }
        let running = Task { try await worker.run() }
        await started.wait()
        worker.requestStop()
        worker.requestStop()
        let summary = try await running.value
        #expect(summary.released == 1)
        let job = try queue.job(run.jobIDs[0])
        #expect(job.state == .ready && job.maxAttempts == RunDescription.defaultMaxAttempts + 1)
    }

    /// Each body waits until all three have started: they can only finish if they run at once (otherwise the
    /// suite's time limit fails the test).
    @Test func aWorkerWithConcurrencyThreeRunsThreeJobsAtOnce() async throws {
        let queue = try connection()
        try queue.enqueue(noops(3))
        let arrivals = Arrivals()
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"], concurrency: 3, exitWhenIdle: true)) { _, _ in
            arrivals.arrive()
            await arrivals.wait(until: 3)
            return .completed(.null)
        }
        let summary = try await worker.run()
        #expect(summary.succeeded == 3)
    }

    /// Bodies leave in groups of eight (each waits until the eight of its group have started), so the eight
    /// slots finish together and their completions share a transaction.
    @Test func jobsFinishingTogetherShareOneCommit() async throws {
        let queue = try connection()
        let run = try queue.enqueue(noops(64))
        let arrivals = Arrivals()
        let worker = Worker(queue: queue, options: WorkerOptions(kinds: ["noop"], concurrency: 8, exitWhenIdle: true)) { _, _ in
            let ordinal = arrivals.arrive()
            await arrivals.wait(until: (ordinal + 7) / 8 * 8)
            return .completed(.null)
        }
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

/// A one-shot event a task can wait for, fired from anywhere.
final class Signal: Sendable {
    private let state = Locked<(fired: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    func fire() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.fired = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let fired = state.withLock { state -> Bool in
                if !state.fired { state.waiting.append(continuation) }
                return state.fired
            }
            if fired { continuation.resume() }
        }
    }
}

/// Counts bodies as they start, so a body can wait for its siblings; the arrival that completes a group
/// resumes all of its waiters at once.
final class Arrivals: Sendable {
    private let state = Locked<(count: Int, waiting: [(target: Int, continuation: CheckedContinuation<Void, Never>)])>((0, []))

    /// Counts one more arrival; returns its ordinal (1 for the first).
    @discardableResult
    func arrive() -> Int {
        let (ordinal, ready) = state.withLock { state -> (Int, [CheckedContinuation<Void, Never>]) in
            state.count += 1
            let count = state.count
            let ready = state.waiting.filter { $0.target <= count }.map(\.continuation)
            state.waiting.removeAll { $0.target <= count }
            return (count, ready)
        }
        for continuation in ready { continuation.resume() }
        return ordinal
    }

    /// Returns once `target` bodies have arrived (the suite's time limit ends a wait that never does).
    func wait(until target: Int) async {
        await withCheckedContinuation { continuation in
            let arrived = state.withLock { state -> Bool in
                if state.count < target { state.waiting.append((target, continuation)) }
                return state.count >= target
            }
            if arrived { continuation.resume() }
        }
    }
}
