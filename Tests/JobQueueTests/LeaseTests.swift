import AdaptCore
import JobQueue
import Storage
import Testing

/// Leases, heartbeats and fencing tokens: a worker that lost its lease changes nothing.
@Suite struct LeaseTests {
    @Test func anExpiredLeaseCannotWriteEvenBeforeItIsRescued() throws {
        let fixture = try QueueFixture()
        try fixture.enqueue(["a"])
        let claim = try #require(try fixture.claim(lease: 1_000))
        fixture.clock.advance(milliseconds: 1_001)
        let before = try fixture.snapshot()
        #expect(throws: JobQueueError.leaseLost(claim.jobID, token: 1)) { try fixture.queue.complete(claim, output: .null) }
        #expect(throws: JobQueueError.leaseLost(claim.jobID, token: 1)) { try fixture.queue.heartbeat(claim, leaseMilliseconds: 1_000) }
        #expect(try fixture.snapshot() == before)
    }

    @Test func completionHookCommitsWithTheCompletionOrNotAtAll() throws {
        let fixture = try QueueFixture()
        try fixture.database.execute("CREATE TABLE pointer (value TEXT)")
        let run = try fixture.enqueue(["a", "b"], dependsOn: ["b": ["a"]])
        let claim = try #require(try fixture.claim())
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try fixture.queue.complete(claim, output: .null) { db in
                try db.run("INSERT INTO pointer VALUES ('v2')")
                throw Refused()
            }
        }
        #expect(try fixture.state(run.jobIDs[0]) == .running && fixture.state(run.jobIDs[1]) == .pending)
        #expect(try fixture.count("SELECT count(*) FROM pointer") == 0)
        try fixture.queue.complete(claim, output: .null) { db in try db.run("INSERT INTO pointer VALUES ('v2')") }
        #expect(try fixture.state(run.jobIDs[0]) == .succeeded && fixture.state(run.jobIDs[1]) == .ready)
        #expect(try fixture.count("SELECT count(*) FROM pointer") == 1)
    }

    @Test func progressAppendsAnEventWithoutChangingState() throws {
        let fixture = try QueueFixture()
        try fixture.enqueue(["a"])
        let claim = try #require(try fixture.claim())
        try fixture.queue.progress(claim, message: "step 10 loss 2.5")
        let event = try #require(try fixture.queue.events(job: claim.jobID).last)
        #expect(event.from == .running && event.to == .running && event.message == "step 10 loss 2.5" && event.attempt == 1)
        #expect(try fixture.state(claim.jobID) == .running)
    }

    @Test func releaseGivesTheJobBackWithoutUsingAnAttempt() throws {
        let fixture = try QueueFixture()
        try fixture.enqueue(["a"], maxAttempts: 1)
        let claim = try #require(try fixture.claim())
        try fixture.queue.release(claim, reason: "shutting down")
        let again = try #require(try fixture.claim())
        #expect(again.token == 2 && again.maxAttempts == 2)
    }

    @Test func completingCanClaimTheNextJobInTheSameTransaction() throws {
        let fixture = try QueueFixture()
        let run = try fixture.enqueue(["a", "b", "c"], dependsOn: ["b": ["a"]])
        let request = ClaimRequest(kinds: ["test"], owner: "w1", leaseMilliseconds: 1_000)
        let a = try #require(try fixture.queue.claim(request))
        let next = try #require(try fixture.queue.complete(a, output: .null, thenClaim: request))
        // b became ready in the completion and is older than c, so it comes next.
        #expect(next.jobID == run.jobIDs[1] && next.token == 1)
        #expect(try fixture.state(run.jobIDs[0]) == .succeeded && fixture.state(run.jobIDs[1]) == .running)
        let before = try fixture.snapshot()
        fixture.clock.advance(milliseconds: 1_001)
        #expect(throws: JobQueueError.leaseLost(next.jobID, token: 1)) {
            try fixture.queue.complete(next, output: .null, thenClaim: request)
        }
        #expect(try fixture.snapshot() == before, "a refused completion claims nothing either")
    }

    @Test func aGroupCommitsNextClaimsAreTakenAllOrNoneAndNeverUndoTheCompletions() throws {
        let fixture = try QueueFixture()
        let run = try fixture.enqueue(["a", "b", "c", "d"])
        let request = ClaimRequest(kinds: ["test"], owner: "w1", leaseMilliseconds: 1_000)
        let first = try #require(try fixture.queue.claim(request))
        let second = try #require(try fixture.queue.claim(request))
        // This connection alone refuses to start job d, so the second of the two next claims fails.
        try fixture.database.execute("""
            CREATE TEMP TRIGGER refuse_d BEFORE UPDATE OF state ON main.jobs WHEN NEW.id = \(run.jobIDs[3].value)
            BEGIN SELECT RAISE(ABORT, 'refused for the test'); END
            """)
        let outcomes = try fixture.queue.complete([
            .init(claim: first, output: .null, claimNext: true), .init(claim: second, output: .null, claimNext: true),
        ], thenClaim: request)
        #expect(try outcomes.map { try $0.get() } == [nil, nil], "both completions stand, with no next job")
        #expect(try fixture.state(first.jobID) == .succeeded && fixture.state(second.jobID) == .succeeded)
        #expect(try fixture.state(run.jobIDs[2]) == .ready, "job c is not left running unknown to its worker")
        #expect(try fixture.state(run.jobIDs[3]) == .ready)
    }

    @Test func aGroupCommitRecordsEachCompletionOnItsOwn() throws {
        let fixture = try QueueFixture()
        let run = try fixture.enqueue(["a", "b", "c", "d", "e"])
        let request = ClaimRequest(kinds: ["test"], owner: "w1", leaseMilliseconds: 1_000)
        let stale = try #require(try fixture.claim(lease: 100))
        fixture.clock.advance(milliseconds: 200)
        let hooked = try #require(try fixture.queue.claim(request))
        let fine = try #require(try fixture.queue.claim(request))
        struct HookFailed: Error {}
        let outcomes = try fixture.queue.complete([
            .init(claim: stale, output: .string("stale"), claimNext: true),
            .init(claim: hooked, output: .string("hooked"), claimNext: true, alsoInTransaction: { db in
                try db.run("UPDATE jobs SET error = 'written by the hook' WHERE id = ?", hooked.jobID)
                throw HookFailed()
            }),
            .init(claim: fine, output: .string("fine"), claimNext: true),
        ], thenClaim: request)
        #expect(throws: JobQueueError.leaseLost(stale.jobID, token: 1)) { try outcomes[0].get() }
        #expect(throws: HookFailed.self) { try outcomes[1].get() }
        let next = try #require(try outcomes[2].get(), "only the recorded completion gets a next job")
        #expect(next.jobID == run.jobIDs[3])
        #expect(try fixture.state(stale.jobID) == .running, "a stale claim changes nothing")
        let rolledBack = try fixture.queue.job(hooked.jobID)
        #expect(rolledBack.state == .running && rolledBack.error == nil, "the failed hook's completion is undone")
        #expect(try fixture.queue.job(fine.jobID).output == .string("fine"))
        #expect(try fixture.state(run.jobIDs[4]) == .ready)
    }
}
