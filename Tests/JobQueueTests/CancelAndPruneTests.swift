import AdaptCore
import JobQueue
import Storage
import Testing

@Suite struct CancelAndPruneTests {
    @Test func cancellingARunCancelsWaitingJobsAndTellsTheRunningOneAtItsHeartbeat() throws {
        let fixture = try QueueFixture()
        let run = try fixture.enqueue(["a", "b", "c", "d"], dependsOn: ["c": ["a"]])
        let running = try #require(try fixture.claim())
        let failing = try #require(try fixture.claim())
        try fixture.queue.fail(failing, error: "flaky")
        #expect(try fixture.queue.cancel(run: run.runID) == .init(cancelled: 3, running: 1))
        #expect(try run.jobIDs.map(fixture.state) == [.running, .cancelled, .cancelled, .cancelled])
        #expect(try fixture.queue.heartbeat(running, leaseMilliseconds: 1_000) == .cancelled)
        try fixture.queue.acknowledgeCancellation(running, reason: "stopped")
        #expect(try fixture.state(running.jobID) == .cancelled)
        #expect(try fixture.queue.run(run.runID).state == "cancelled")
        fixture.clock.advance(milliseconds: 3_600_000)
        #expect(try fixture.claim() == nil)
    }

    @Test func aRunningJobOfACancelledRunThatFailsOrIsReleasedEndsCancelledNotRetried() throws {
        let fixture = try QueueFixture()
        let run = try fixture.enqueue(["a", "b"])
        let a = try #require(try fixture.claim())
        let b = try #require(try fixture.claim())
        try fixture.queue.cancel(run: run.runID)
        #expect(try fixture.queue.fail(a, error: "interrupted") == .cancelled)
        try fixture.queue.release(b, reason: "stopping")
        #expect(try fixture.state(b.jobID) == .cancelled)
    }

    @Test func cancellingAFinishedRunChangesNothing() throws {
        let fixture = try QueueFixture()
        let run = try fixture.enqueue(["a"])
        try fixture.queue.complete(try #require(try fixture.claim()), output: .null)
        let before = try fixture.snapshot()
        #expect(try fixture.queue.cancel(run: run.runID) == .init(cancelled: 0, running: 0))
        #expect(try fixture.snapshot() == before)
        #expect(try fixture.queue.run(run.runID).state == "succeeded")
    }

    @Test func unknownIdentifiersAreNamedInTheError() throws {
        let fixture = try QueueFixture()
        #expect(throws: JobQueueError.unknownRun(RunID(9))) { try fixture.queue.cancel(run: RunID(9)) }
        #expect(throws: JobQueueError.unknownJob(JobID(9))) { try fixture.queue.retry(job: JobID(9)) }
        #expect(JobQueueError.unknownRun(RunID(9)).description.contains("run-9"))
        #expect(JobQueueError.unknownRun(RunID(9)).description.contains("adapt runs"))
    }

    @Test func onlyFinishedJobsCanBeRetried() throws {
        let fixture = try QueueFixture()
        let run = try fixture.enqueue(["a"])
        #expect(throws: JobQueueError.notRetryable(run.jobIDs[0], state: .ready)) { try fixture.queue.retry(job: run.jobIDs[0]) }
    }

    @Test func pruneDeletesOnlyFinishedRunsOlderThanTheCutoffWithTheirJobsAndEvents() throws {
        let fixture = try QueueFixture()
        let old = try fixture.enqueue(["a", "b"], dependsOn: ["b": ["a"]])
        while let claim = try fixture.claim() { try fixture.queue.complete(claim, output: .null) }
        let unfinishedOld = try fixture.enqueue(["x"], kind: "other")
        fixture.clock.advance(milliseconds: 3 * 86_400_000)
        let recent = try fixture.enqueue(["c"])
        try fixture.queue.complete(try #require(try fixture.claim()), output: .null)
        let outcome = try fixture.queue.pruneHistory(olderThanMilliseconds: 2 * 86_400_000)
        #expect(outcome == .init(runs: 1, jobs: 2, events: 7))  // a: 3 moves, b: 4 (it starts pending)
        #expect(try !fixture.queue.runExists(old.runID))
        #expect(try fixture.queue.runExists(unfinishedOld.runID) && fixture.queue.runExists(recent.runID))
        #expect(try fixture.count("SELECT count(*) FROM job_events WHERE run_id = \(old.runID.value)") == 0)
        #expect(try fixture.count("SELECT count(*) FROM job_dependencies") == 0)
    }
}
