import AdaptCore
import JobQueue
import Storage
import Testing

@Suite struct RetryTests {
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
}

import Foundation
