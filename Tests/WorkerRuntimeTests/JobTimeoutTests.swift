import AdaptCore
import Foundation
import JobQueue
import Storage
import Testing
import TestSupport
import WorkerRuntime

/// The worker's job timeout (issue 43): a hung body no longer holds its lease forever. One turn at a time on a
/// manual clock (`runOnce`, heartbeats sent by `beatDueLeases`).
@Suite(.timeLimit(.minutes(Slowdown.minutes(1)))) struct JobTimeoutTests {
    let directory = TemporaryDirectory("job-timeout-test")
    let clock = ManualClock()

    func queue() throws -> JobQueue {
        try JobQueue(database: try Database(path: directory.file("adapt.sqlite").path, durability: .normal), clock: clock,
                     retryPolicy: RetryPolicy(baseMilliseconds: 1_000, capMilliseconds: 8_000))
    }

    func options(timeout: Int64, grace: Int64 = 30_000, hung: (@Sendable (JobID) -> Void)? = nil) -> WorkerOptions {
        var options = WorkerOptions(kinds: ["hang"], leaseMilliseconds: 3_000)
        options.jobTimeoutMilliseconds = timeout
        options.hungBodyGraceMilliseconds = grace
        options.hungBody = hung
        return options
    }

    @Test func aBodyRunningPastItsTimeoutIsInterruptedFailedAsTimedOutAndRetriedByItsPolicy() async throws {
        let queue = try queue()
        let run = try queue.enqueue(RunDescription(kind: "t", steps: [.init(name: "a", kind: "hang", maxAttempts: 2)]))
        let id = run.jobIDs[0]
        let started = Signal()
        let sawTimeout = Locked(false)
        let worker = Worker(queue: queue, options: options(timeout: 5_000)) { claim, context in
            guard claim.attempt == 1 else { return .completed(.int(claim.attempt)) }
            started.fire()
            do { try await Task.sleep(for: .seconds(3_600)) } catch {
                sawTimeout.withLock { $0 = context.isTimedOut && context.isCancelled }
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
        #expect(try queue.job(id).state == .running, "interrupted before its timeout")
        clock.advance(milliseconds: 1)
        worker.beatDueLeases()
        #expect(try await turn.value == .ran(id, .failed))
        #expect(sawTimeout.withLock { $0 })
        let failed = try queue.job(id)
        #expect(failed.state == .failed && failed.error == "timed out after 5 s" && failed.leaseOwner == nil)
        #expect(try queue.events(job: id).last?.message?.contains("timed out after 5 s") == true)
        // The retry policy applies: the next attempt runs after its backoff.
        clock.set(failed.runAt)
        #expect(try await worker.runOnce() == .ran(id, .succeeded))
        #expect(try queue.job(id).output == .int(2))
    }

    @Test func aBodyThatIgnoresItsTimeoutGetsNoMoreHeartbeatsAfterTheGraceSoItsJobIsRescued() async throws {
        let queue = try queue()
        let run = try queue.enqueue(RunDescription(kind: "t", steps: [.init(name: "a", kind: "hang", maxAttempts: 3)]))
        let id = run.jobIDs[0]
        let started = Signal(), release = Signal()
        let hung = Locked<[JobID]>([])
        let worker = Worker(queue: queue, options: options(timeout: 2_000, grace: 1_000) { id in hung.withLock { $0.append(id) } }) { _, _ in
            started.fire()
            await release.wait()  // deaf to cancellation
            return .retry(error: "never reached in time")
        }
        let turn = Task { try await worker.runOnce() }
        await started.wait()
        clock.advance(milliseconds: 1_000)
        worker.beatDueLeases()
        clock.advance(milliseconds: 1_000)
        worker.beatDueLeases()  // timed out: interrupted, the body does not notice
        clock.advance(milliseconds: 999)
        worker.beatDueLeases()
        #expect(hung.withLock { $0.isEmpty })
        clock.advance(milliseconds: 1)
        worker.beatDueLeases()
        #expect(hung.withLock { $0 } == [id])
        let leaseEnd = try #require(try queue.job(id).leaseExpiresAt)
        clock.set(leaseEnd + 10_000)
        worker.beatDueLeases()  // nothing extends it any more
        #expect(try queue.rescueExpiredLeases().map(\.job) == [id])
        release.fire()
        // Its late result is refused by the fence: the job belongs to its next attempt.
        #expect(try await turn.value == .ran(id, .leaseLost))
        #expect(try queue.job(id).state != .running)
    }
}

/// `adapt worker --timeout-ms` as a real process: a noop job sleeping ten minutes is failed as timed out on each
/// attempt, then discarded, and the worker exits once idle.
@Test func theWorkerCommandFailsAJobPastItsTimeoutOnEveryAttemptThenDiscardsIt() async throws {
    let directory = TemporaryDirectory("job-timeout-process")
    let state = directory.file("state").path
    func adapt(_ arguments: [String]) async throws -> ProcessResult {
        try await Executables.runAsync("adapt", ["--state", state, "--durability", "normal"] + arguments)
    }
    let enqueued = try await adapt(["enqueue", "noop", "--sleep-ms", "600000", "--max-attempts", "2", "--json"])
    #expect(enqueued.status == 0, "\(enqueued.stderr)")
    let started = ContinuousClock.now
    let worker = try await adapt(["worker", "--kinds", "noop", "--exit-when-idle", "--timeout-ms", "300", "--json"])
    #expect(worker.status == 0, "\(worker.stderr)")
    // Well short of the body's ten minutes, with room for a machine so busy that the body misses its interruption
    // and waits out the grace and its lease on both attempts (seen: 89 s beside the whole parallel suite).
    #expect(ContinuousClock.now - started < .seconds(Slowdown.minutes(5) * 60), "the worker waited for the sleeping body")
    let summary = try JSON.decode(JSONValue.self, from: worker.stdout, context: "worker --json")
    #expect(summary["failed"]?.intValue == 1 && summary["discarded"]?.intValue == 1, "\(summary)")
    let jobs = try JSON.decode(JSONValue.self, from: try await adapt(["jobs", "--json"]).stdout, context: "jobs").arrayValue ?? []
    let id = try #require(jobs.first?["id"]?.stringValue)
    let shown = try JSON.decode(JSONValue.self, from: try await adapt(["show", id, "--json"]).stdout, context: "show")
    #expect(shown["state"]?.stringValue == "discarded" && shown["error"]?.stringValue == "timed out after 0.300 s", "\(shown)")
}
