import AdaptCore
import JobQueue
import Storage
import Testing

@Suite struct RetryTests {
    @Test func aRetryableFailureWaitsForItsBackoffThenRunsAgain() throws {
        let fixture = try QueueFixture()
        let run = try fixture.enqueue(["a"], maxAttempts: 3)
        let first = try #require(try fixture.claim())
        #expect(try fixture.queue.fail(first, error: "flaky") == .failed)
        let delay = fixture.queue.retryPolicy.delay(job: first.jobID, attempt: 1)
        let job = try fixture.queue.job(run.jobIDs[0])
        #expect(job.state == .failed && job.error == "flaky" && job.runAt == fixture.clock.nowMilliseconds() + delay)
        fixture.clock.advance(milliseconds: delay - 1)
        #expect(try fixture.claim() == nil)
        fixture.clock.advance(milliseconds: 1)
        let second = try #require(try fixture.claim())
        #expect(second.token == 2 && second.jobID == first.jobID)
        try fixture.queue.complete(second, output: .int(1))
        #expect(try fixture.queue.job(run.jobIDs[0]).error == nil)
    }

    @Test func aJobOutOfAttemptsIsDiscardedKeepingItsLastError() throws {
        let fixture = try QueueFixture()
        let run = try fixture.enqueue(["a"], maxAttempts: 2)
        let first = try #require(try fixture.claim())
        try fixture.queue.fail(first, error: "first error")
        fixture.clock.advance(milliseconds: 3_600_000)
        let second = try #require(try fixture.claim())
        #expect(second.isLastAttempt)
        #expect(try fixture.queue.fail(second, error: "second error") == .discarded)
        let job = try fixture.queue.job(run.jobIDs[0])
        #expect(job.state == .discarded && job.error == "second error" && job.attempt == 2 && job.finishedAt != nil)
        fixture.clock.advance(milliseconds: 3_600_000)
        #expect(try fixture.claim() == nil)
    }

    @Test func aNonRetryableFailureIsDiscardedAtOnce() throws {
        let fixture = try QueueFixture()
        try fixture.enqueue(["a"], maxAttempts: 5)
        let claim = try #require(try fixture.claim())
        #expect(try fixture.queue.fail(claim, error: "bad input", retryable: false) == .discarded)
    }

    @Test func anExplicitRetryAfterOverridesTheBackoff() throws {
        let fixture = try QueueFixture()
        let run = try fixture.enqueue(["a"])
        let claim = try #require(try fixture.claim())
        try fixture.queue.fail(claim, error: "later", retryAfter: 42)
        #expect(try fixture.queue.job(run.jobIDs[0]).runAt == fixture.clock.nowMilliseconds() + 42)
    }

    @Test func backoffGrowsExponentiallyWithSeededJitterUpToTheCap() {
        let policy = RetryPolicy(baseMilliseconds: 1_000, capMilliseconds: 60_000)
        for attempt in 1...10 {
            let nominal = min(60_000.0, 1_000 * pow(2, Double(attempt - 1)))
            for job in 1...20 {
                let d = Double(policy.delay(job: JobID(Int64(job)), attempt: attempt))
                #expect(d >= nominal / 2 && d < nominal, "attempt \(attempt) job \(job): \(d)")
            }
        }
        // The same job and attempt always draw the same delay; different jobs spread out.
        #expect(policy.delay(job: JobID(5), attempt: 3) == policy.delay(job: JobID(5), attempt: 3))
        let spread = Set((1...20).map { policy.delay(job: JobID(Int64($0)), attempt: 3) })
        #expect(spread.count > 15)
    }

    @Test func snoozeDoesNotUseUpAnAttempt() throws {
        let fixture = try QueueFixture()
        let run = try fixture.enqueue(["a"], maxAttempts: 1)
        let claim = try #require(try fixture.claim())
        try fixture.queue.snooze(claim, until: fixture.clock.nowMilliseconds() + 500)
        #expect(try fixture.claim() == nil)
        fixture.clock.advance(milliseconds: 500)
        let again = try #require(try fixture.claim())
        #expect(again.token == 2 && again.maxAttempts == 2)
        #expect(try fixture.state(run.jobIDs[0]) == .running)
    }
}

import Foundation
