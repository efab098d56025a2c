import AdaptCore
import Foundation
import JobQueue
import Storage
import Testing
import TestSupport
import WorkerRuntime

/// A job's own timeout (`timeout_ms`, a pipeline step's `timeout_seconds`), on both backends: a hung attempt is
/// failed as timed out with the way out in its error and retried by the job's retry policy, whether its worker
/// noticed or a rescue did, and an attempt that finishes in time completes as before. One turn at a time on a
/// manual clock (`runOnce`, heartbeats sent by `beatDueLeases`).
@Suite(.serialized, .timeLimit(.minutes(Slowdown.minutes(3)))) struct StepTimeoutTests {
    let directory = TemporaryDirectory("step-timeout-test")
    let clock = ManualClock()
    static let policy = RetryPolicy(baseMilliseconds: 1_000, capMilliseconds: 8_000)
    static let timedOut = "timed out after 5 s; if the step needs longer, raise its timeout_seconds in the pipeline file "
        + "(timeout_ms in a run description)"

    /// Runs `test` on a fresh engine of `backend`: the worker loop is generic over the engine, so each backend gets
    /// its own concrete type.
    func withEngine(_ backend: Backend, _ test: (any WorkerEngine) async throws -> Void) async throws {
        switch backend {
        case .sqlite:
            let database = try Database(path: directory.file("adapt.sqlite").path, durability: .normal)
            try await test(try JobQueue(database: database, clock: clock, retryPolicy: Self.policy))
        case .postgres:
            let target = try PostgresCluster.shared().makeDatabase()
            try await test(try PostgresJobQueue(connectionString: target, clock: clock, retryPolicy: Self.policy))
        }
    }

    func run(timeout: Int64?, maxAttempts: Int = 2) -> RunDescription {
        RunDescription(kind: "t", steps: [.init(name: "hang", kind: "hang", maxAttempts: maxAttempts,
                                                leaseMilliseconds: 3_000, timeoutMilliseconds: timeout)])
    }

    func options(workerTimeout: Int64? = nil) -> WorkerOptions {
        var options = WorkerOptions(kinds: ["hang"], leaseMilliseconds: 3_000)
        options.jobTimeoutMilliseconds = workerTimeout
        return options
    }

    @Test(arguments: Backend.allCases)
    func aStepThatHangsPastItsOwnTimeoutIsFailedAsTimedOutAndRetriedByItsPolicy(backend: Backend) async throws {
        try await withEngine(backend) { engine in try await hangsAndIsRetried(engine) }
    }

    private func hangsAndIsRetried<Engine: WorkerEngine>(_ queue: Engine) async throws {
        let id = try queue.enqueue(run(timeout: 5_000)).jobIDs[0]
        #expect(try queue.job(id).timeoutMilliseconds == 5_000)
        let started = Signal()
        let sawTimeout = Locked(false)
        // The job's own timeout wins over the worker's shorter one.
        let worker = Worker(queue: queue, options: options(workerTimeout: 1_000)) { claim, context in
            guard claim.attempt == 1 else { return .completed(.int(claim.attempt)) }
            #expect(claim.timeoutMilliseconds == 5_000)
            started.fire()
            do { try await Task.sleep(for: .seconds(3_600)) } catch {
                sawTimeout.withLock { $0 = context.isTimedOut }
                throw error
            }
            return .completed(.null)
        }
        let turn = Task { try await worker.runOnce() }
        await started.wait()
        for _ in 0..<4 {  // heartbeats keep the lease meanwhile
            clock.advance(milliseconds: 1_000)
            worker.beatDueLeases()
        }
        clock.advance(milliseconds: 999)
        worker.beatDueLeases()
        #expect(try queue.job(id).state == .running, "interrupted before its own timeout")
        clock.advance(milliseconds: 1)
        worker.beatDueLeases()
        #expect(try await turn.value == .ran(id, .failed))
        #expect(sawTimeout.withLock { $0 })
        let failed = try queue.job(id)
        #expect(failed.state == .failed && failed.error == Self.timedOut && failed.leaseOwner == nil)
        #expect(failed.runAt > clock.nowMilliseconds(), "retried at once instead of after its backoff")
        #expect(try queue.events(run: nil, job: id, afterID: 0, limit: 100).last?.message?.contains(Self.timedOut) == true)
        #expect(try await worker.runOnce() == .idle(nextWakeAt: failed.runAt), "claimed again before its backoff")
        clock.set(failed.runAt)
        #expect(try await worker.runOnce() == .ran(id, .succeeded))
        #expect(try queue.job(id).output == .int(2))
    }

    @Test(arguments: Backend.allCases)
    func aStepThatFinishesUnderItsTimeoutCompletes(backend: Backend) async throws {
        try await withEngine(backend) { engine in try await finishesInTime(engine) }
    }

    private func finishesInTime<Engine: WorkerEngine>(_ queue: Engine) async throws {
        let id = try queue.enqueue(run(timeout: 5_000)).jobIDs[0]
        let started = Signal(), release = Signal()
        let worker = Worker(queue: queue, options: options()) { _, context in
            started.fire()
            await release.wait()
            return .completed(.bool(context.isTimedOut))
        }
        let turn = Task { try await worker.runOnce() }
        await started.wait()
        for _ in 0..<4 {
            clock.advance(milliseconds: 1_000)
            worker.beatDueLeases()
        }
        release.fire()
        #expect(try await turn.value == .ran(id, .succeeded))
        let job = try queue.job(id)
        #expect(job.state == .succeeded && job.output == .bool(false) && job.error == nil)
    }

    @Test(arguments: Backend.allCases)
    func aRescueOfALeasePastItsTimeoutCountsAsTimedOut(backend: Backend) async throws {
        try await withEngine(backend) { engine in try await rescuedPastTimeout(engine) }
    }

    private func rescuedPastTimeout<Engine: WorkerEngine>(_ queue: Engine) async throws {
        let ids = try queue.enqueue(RunDescription(kind: "t", steps: [
            .init(name: "timed", kind: "hang", maxAttempts: 2, leaseMilliseconds: 3_000, timeoutMilliseconds: 5_000),
            .init(name: "last", kind: "hang", maxAttempts: 1, leaseMilliseconds: 3_000, timeoutMilliseconds: 5_000),
            .init(name: "untimed", kind: "hang", maxAttempts: 2, leaseMilliseconds: 3_000),
        ])).jobIDs
        let claims = try queue.claim(ClaimRequest(kinds: ["hang"], owner: "dead-worker", leaseMilliseconds: 3_000), limit: 3)
        #expect(claims.map(\.timeoutMilliseconds) == [5_000, 5_000, nil])
        // Its worker kept the lease alive past the deadline, then died without a word.
        clock.advance(milliseconds: 3_000)
        for claim in claims { _ = try queue.heartbeat(claim, leaseMilliseconds: 3_000) }
        clock.advance(milliseconds: 3_001)
        let rescued = try queue.rescueExpiredLeases()
        #expect(rescued.map(\.state) == [.failed, .discarded, .ready])
        let timed = try queue.job(ids[0]), last = try queue.job(ids[1]), untimed = try queue.job(ids[2])
        #expect(timed.error == Self.timedOut && timed.runAt > clock.nowMilliseconds(), "\(timed)")
        #expect(last.error == Self.timedOut && last.finishedAt != nil)
        #expect(untimed.error == nil && untimed.runAt == clock.nowMilliseconds())
        #expect(try queue.events(run: nil, job: ids[0], afterID: 0, limit: 100).last?.message?.contains("past its timeout; retry at") == true)
    }
}

/// A run description's `timeout_ms` through real processes: `adapt enqueue run` stores it, `adapt show` prints it, and
/// an `adapt worker` given no timeout of its own fails the ten-minute noop job on it, then discards it.
@Test func aRealWorkerFailsAJobPastItsOwnTimeoutThenDiscardsIt() async throws {
    let directory = TemporaryDirectory("step-timeout-process")
    let state = directory.file("state").path
    func adapt(_ arguments: [String], input: String? = nil) async throws -> ProcessResult {
        try await Executables.runAsync("adapt", ["--state", state, "--durability", "normal"] + arguments, input: input)
    }
    let description = #"{"kind": "t", "steps": [{"name": "hang", "kind": "noop", "input": {"sleep_ms": 600000}, "max_attempts": 1, "timeout_ms": 300}]}"#
    let enqueued = try await adapt(["enqueue", "run", "-"], input: description)
    #expect(enqueued.status == 0, "\(enqueued.stderr)")
    let before = try JSON.decode(JSONValue.self, from: try await adapt(["show", "job-1", "--json"]).stdout, context: "show")
    #expect(before["timeout_ms"] == .int(300), "\(before)")
    let started = ContinuousClock.now
    let worker = try await adapt(["worker", "--kinds", "noop", "--exit-when-idle", "--json"])
    #expect(worker.status == 0, "\(worker.stderr)")
    #expect(ContinuousClock.now - started < .seconds(Slowdown.minutes(1) * 60), "the worker waited for the sleeping body")
    let shown = try JSON.decode(JSONValue.self, from: try await adapt(["show", "job-1", "--json"]).stdout, context: "show")
    #expect(shown["state"]?.stringValue == "discarded", "\(shown)")
    #expect(shown["error"]?.stringValue == "timed out after 0.300 s; if the step needs longer, raise its timeout_seconds in the "
            + "pipeline file (timeout_ms in a run description)", "\(shown)")
}
