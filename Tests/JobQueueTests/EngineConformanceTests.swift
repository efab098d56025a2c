import AdaptCore
import Foundation
import JobQueue
import Storage
import Testing
import TestSupport

/// The job engine's contract, run against both backends: what `LeaseTests`, `RetryTests`, `DAGTests`,
/// `CancelAndPruneTests`, `StateMachineTests` and `CheckpointPointerTests` check on SQLite, checked the same way
/// on SQLite and on PostgreSQL through `JobEngine`.
@Suite(.serialized) struct EngineConformanceTests {
    // MARK: Enqueue and dependencies

    @Test(arguments: Backend.allCases)
    func enqueueStoresARunWhoseStepsWaitForTheirParents(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        let run = try fixture.enqueue(["promote", "eval", "train", "sample", "prune"],
                                      dependsOn: ["promote": ["eval"], "eval": ["train", "sample"], "train": ["sample"],
                                                  "sample": ["prune"]])
        #expect(run.existing == false && run.jobIDs.count == 5)
        #expect(try fixture.queue.parents(of: run.jobIDs[1]) == [run.jobIDs[2], run.jobIDs[3]].sorted { $0.value < $1.value })
        #expect(try fixture.drain() == ["prune", "sample", "train", "eval", "promote"])
        #expect(try fixture.queue.run(run.runID).state == "succeeded")
    }

    @Test(arguments: Backend.allCases)
    func aUniqueKeyMakesTheSecondEnqueueReturnTheFirstRun(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        let first = try fixture.enqueue(["a", "b"], uniqueKey: "night-1")
        let second = try fixture.enqueue(["a", "b"], uniqueKey: "night-1")
        #expect(second.existing && second.runID == first.runID && second.jobIDs == first.jobIDs)
        #expect(try fixture.count("SELECT count(*) FROM jobs") == 2)
        let other = try fixture.enqueue(["a"])
        #expect(other.jobIDs == [JobID(3)], "a run's jobs take the next consecutive ids")
    }

    @Test(arguments: Backend.allCases)
    func aJobBecomesReadyOnlyWhenItsLastParentSucceeds(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        let run = try fixture.enqueue(["a", "b", "c"], dependsOn: ["c": ["a", "b"]])
        let first = try #require(try fixture.claim())
        try fixture.queue.complete(first, output: .object([:]))
        #expect(try fixture.state(run.jobIDs[2]) == .pending)
        let second = try #require(try fixture.claim())
        try fixture.queue.complete(second, output: .object([:]))
        #expect(try fixture.state(run.jobIDs[2]) == .ready)
    }

    // MARK: Leases and fencing

    @Test(arguments: Backend.allCases)
    func aClaimIsALeaseWithTheAttemptAsFencingToken(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        let run = try fixture.enqueue(["a"])
        let claim = try #require(try fixture.claim(owner: "host/1", lease: 5_000))
        #expect(claim.token == 1 && claim.owner == "host/1" && claim.input == .object(["name": .string("a")]))
        #expect(claim.leaseExpiresAt == fixture.clock.nowMilliseconds() + 5_000)
        let job = try fixture.queue.job(run.jobIDs[0])
        #expect(job.state == .running && job.leaseOwner == "host/1" && job.leaseExpiresAt == claim.leaseExpiresAt)
        #expect(try fixture.claim() == nil)
    }

    @Test(arguments: Backend.allCases)
    func aJobsOwnLeaseWinsOverTheWorkersDefaultButNotOverAnExplicitOne(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        let steps: [RunDescription.Step] = [.init(name: "own", kind: "t", leaseMilliseconds: 7_000), .init(name: "none", kind: "t")]
        try fixture.queue.enqueue(RunDescription(kind: "t", steps: steps))
        let now = fixture.clock.nowMilliseconds()
        let own = try #require(try fixture.claim(["t"], lease: 1_000))
        let none = try #require(try fixture.claim(["t"], lease: 1_000))
        #expect(own.name == "own" && own.leaseMilliseconds == 7_000 && own.leaseExpiresAt == now + 7_000)
        #expect(none.name == "none" && none.leaseMilliseconds == 1_000 && none.leaseExpiresAt == now + 1_000)
        try fixture.queue.release(own, reason: "test")
        let told = ClaimRequest(kinds: ["t"], owner: "w2", leaseMilliseconds: 500, overridesJobLeases: true)
        let again = try #require(try fixture.queue.claim(told))
        #expect(again.name == "own" && again.leaseMilliseconds == 500 && again.leaseExpiresAt == now + 500)
        #expect(try fixture.queue.job(again.jobID).leaseExpiresAt == now + 500)
    }

    @Test(arguments: Backend.allCases)
    func heartbeatExtendsTheLease(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        try fixture.enqueue(["a"])
        let claim = try #require(try fixture.claim(lease: 1_000))
        fixture.clock.advance(milliseconds: 900)
        #expect(try fixture.queue.heartbeat(claim, leaseMilliseconds: 1_000) == .extended(until: fixture.clock.nowMilliseconds() + 1_000))
        fixture.clock.advance(milliseconds: 900)
        #expect(try fixture.queue.rescueExpiredLeases().isEmpty)
        try fixture.queue.complete(claim, output: .null)
    }

    @Test(arguments: Backend.allCases)
    func rescuesJobWhoseLeaseExpiredCountingTheLostAttempt(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        let run = try fixture.enqueue(["a", "b"], dependsOn: ["b": ["a"]], maxAttempts: 2)
        _ = try #require(try fixture.claim(lease: 1_000))
        fixture.clock.advance(milliseconds: 1_000)
        #expect(try fixture.queue.rescueExpiredLeases().isEmpty, "a lease is held up to and including its expiry")
        fixture.clock.advance(milliseconds: 1)
        #expect(try fixture.queue.rescueExpiredLeases() == [.init(job: run.jobIDs[0], attempt: 1, state: .ready)])
        let again = try #require(try fixture.claim())
        #expect(again.token == 2)
        fixture.clock.advance(milliseconds: 1_001)
        #expect(try fixture.queue.rescueExpiredLeases() == [.init(job: run.jobIDs[0], attempt: 2, state: .discarded)])
        let job = try fixture.queue.job(run.jobIDs[0])
        #expect(job.state == .discarded && job.error?.contains("expired") == true)
        #expect(try fixture.state(run.jobIDs[1]) == .cancelled, "a discarded job's dependents are cancelled")
    }

    @Test(arguments: Backend.allCases)
    func aStaleTokenCannotCompleteFailHeartbeatOrReport(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        try fixture.enqueue(["a", "b"], dependsOn: ["b": ["a"]])
        let stale = try #require(try fixture.claim(owner: "paused", lease: 1_000))
        fixture.clock.advance(milliseconds: 1_001)
        try fixture.queue.rescueExpiredLeases()
        let fresh = try #require(try fixture.claim(owner: "fresh", lease: 1_000))
        #expect(fresh.jobID == stale.jobID && fresh.token == 2)
        let before = try fixture.snapshot()
        let lost = JobQueueError.leaseLost(stale.jobID, token: 1)
        #expect(throws: lost) { try fixture.queue.complete(stale, output: .string("stale")) }
        #expect(throws: lost) { try fixture.queue.fail(stale, error: "stale", retryable: true, retryAfter: nil) }
        #expect(throws: lost) { try fixture.queue.heartbeat(stale, leaseMilliseconds: 1_000) }
        #expect(throws: lost) { try fixture.queue.progress(stale, message: "stale") }
        #expect(throws: lost) { try fixture.queue.release(stale, reason: "stale") }
        #expect(throws: lost) { try fixture.queue.snooze(stale, until: 0) }
        #expect(throws: lost) { try fixture.queue.acknowledgeCancellation(stale, reason: "stale") }
        #expect(throws: lost) { try fixture.queue.recordCheckpointPointer(stale, .string("stale")) }
        #expect(try fixture.snapshot() == before)
        try fixture.queue.complete(fresh, output: .string("fresh"))
        #expect(try fixture.queue.job(fresh.jobID).output == .string("fresh"))
    }

    @Test(arguments: Backend.allCases)
    func anExpiredLeaseCannotWriteEvenBeforeItIsRescued(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        try fixture.enqueue(["a"])
        let claim = try #require(try fixture.claim(lease: 1_000))
        fixture.clock.advance(milliseconds: 1_001)
        let before = try fixture.snapshot()
        #expect(throws: JobQueueError.leaseLost(claim.jobID, token: 1)) { try fixture.queue.complete(claim, output: .null) }
        #expect(throws: JobQueueError.leaseLost(claim.jobID, token: 1)) { try fixture.queue.heartbeat(claim, leaseMilliseconds: 1_000) }
        #expect(try fixture.snapshot() == before)
    }

    @Test(arguments: Backend.allCases)
    func aDeadWorkersLeasesAreTakenBackAtOnce(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        let run = try fixture.enqueue(["a", "b"])
        _ = try #require(try fixture.claim(owner: "dead"))
        _ = try #require(try fixture.claim(owner: "alive"))
        let rescued = try fixture.queue.releaseLeases(heldBy: "dead", cause: "SIGKILL")
        #expect(rescued == [.init(job: run.jobIDs[0], attempt: 1, state: .ready)])
        #expect(try fixture.state(run.jobIDs[1]) == .running)
        #expect(try fixture.queue.events(run: nil, job: run.jobIDs[0], afterID: 0, limit: 100).last?.message?.contains("SIGKILL") == true)
    }

    @Test(arguments: Backend.allCases)
    func completionHookCommitsWithTheCompletionOrNotAtAll(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        try fixture.run("CREATE TABLE pointer (value TEXT)")
        let run = try fixture.enqueue(["a", "b"], dependsOn: ["b": ["a"]])
        let claim = try #require(try fixture.claim())
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try fixture.completeWithHook(claim, sql: "INSERT INTO pointer VALUES ('v2')", failure: Refused())
        }
        #expect(try fixture.state(run.jobIDs[0]) == .running && fixture.state(run.jobIDs[1]) == .pending)
        #expect(try fixture.count("SELECT count(*) FROM pointer") == 0)
        try fixture.completeWithHook(claim, sql: "INSERT INTO pointer VALUES ('v2')", failure: nil)
        #expect(try fixture.state(run.jobIDs[0]) == .succeeded && fixture.state(run.jobIDs[1]) == .ready)
        #expect(try fixture.count("SELECT count(*) FROM pointer") == 1)
    }

    @Test(arguments: Backend.allCases)
    func completingCanClaimTheNextJobInTheSameTransaction(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        let run = try fixture.enqueue(["a", "b", "c"], dependsOn: ["b": ["a"]])
        let request = ClaimRequest(kinds: ["test"], owner: "w1", leaseMilliseconds: 1_000)
        let a = try #require(try fixture.queue.claim(request))
        let next = try #require(try fixture.queue.complete(a, output: .null, alsoInTransaction: nil, thenClaim: request))
        #expect(next.jobID == run.jobIDs[1] && next.token == 1)
        #expect(try fixture.state(run.jobIDs[0]) == .succeeded && fixture.state(run.jobIDs[1]) == .running)
        let before = try fixture.snapshot()
        fixture.clock.advance(milliseconds: 1_001)
        #expect(throws: JobQueueError.leaseLost(next.jobID, token: 1)) {
            try fixture.queue.complete(next, output: .null, alsoInTransaction: nil, thenClaim: request)
        }
        #expect(try fixture.snapshot() == before, "a refused completion claims nothing either")
    }

    @Test(arguments: Backend.allCases)
    func aGroupCommitRecordsEachHeldLeaseReadiesDependentsAndClaimsOneJobPerAsker(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        let run = try fixture.enqueue(["a", "b", "c", "d", "e"], dependsOn: ["e": ["a", "b"]])
        let request = ClaimRequest(kinds: ["test"], owner: "w1", leaseMilliseconds: 1_000)
        let claims = try fixture.queue.claim(request, limit: 3)
        #expect(claims.map(\.jobID) == Array(run.jobIDs[0...2]), "one claim takes several due jobs in order")
        #expect(claims.map(\.token) == [1, 1, 1])
        try fixture.queue.complete(claims[2], output: .null)
        func groupCommit(_ engine: some JobEngine) throws -> [Result<Claim?, any Error>] {
            try engine.complete([
                JobCompletion(claim: claims[0], output: .int(1), claimNext: true),
                JobCompletion(claim: claims[1], output: .int(2), claimNext: false),
                JobCompletion(claim: claims[2], output: .int(3), claimNext: true),
            ], thenClaim: request)
        }
        let results = try groupCommit(fixture.queue)
        #expect(try results[0].get()?.jobID == run.jobIDs[3], "only the recorded completion that asked gets a job")
        #expect(try results[1].get() == nil)
        #expect(throws: JobQueueError.leaseLost(claims[2].jobID, token: 1)) { try results[2].get() }
        #expect(try fixture.queue.job(run.jobIDs[0]).output == JSONValue.int(1))
        #expect(try fixture.queue.job(run.jobIDs[1]).output == JSONValue.int(2))
        #expect(try fixture.queue.job(run.jobIDs[2]).output == JSONValue.null, "a refused completion writes nothing")
        let readied = try #require(try fixture.queue.events(run: nil, job: run.jobIDs[4], afterID: 0, limit: 10).last)
        #expect(readied.from == .pending && readied.to == .ready && readied.message == "parents succeeded (last: job-2)")
        #expect(try fixture.claim()?.jobID == run.jobIDs[4])
    }

    @Test(arguments: Backend.allCases)
    func progressAppendsAnEventWithoutChangingState(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        try fixture.enqueue(["a"])
        let claim = try #require(try fixture.claim())
        try fixture.queue.progress(claim, message: "step 10 loss 2.5")
        let event = try #require(try fixture.queue.events(run: nil, job: claim.jobID, afterID: 0, limit: 100).last)
        #expect(event.from == .running && event.to == .running && event.message == "step 10 loss 2.5" && event.attempt == 1)
        #expect(try fixture.state(claim.jobID) == .running)
    }

    @Test(arguments: Backend.allCases)
    func theCheckpointPointerIsFencedAndOutlivesTheAttempt(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        let run = try fixture.enqueue(["train"])
        let first = try #require(try fixture.claim(lease: 1_000))
        #expect(try fixture.queue.checkpointPointer(job: first.jobID) == nil)
        let pointer: JSONValue = .array([.object(["digest": .string("ab"), "step": .int(40)])])
        try fixture.queue.recordCheckpointPointer(first, pointer)
        fixture.clock.advance(milliseconds: 1_001)
        try fixture.queue.rescueExpiredLeases()
        let second = try #require(try fixture.claim())
        #expect(try fixture.queue.checkpointPointer(job: run.jobIDs[0]) == pointer, "the next attempt resumes from it")
        #expect(throws: JobQueueError.leaseLost(first.jobID, token: 1)) { try fixture.queue.recordCheckpointPointer(first, .null) }
        #expect(throws: JobQueueError.unknownJob(JobID(99))) { try fixture.queue.checkpointPointer(job: JobID(99)) }
        try fixture.queue.complete(second, output: .null)
    }

    // MARK: Retries

    @Test(arguments: Backend.allCases)
    func aRetryableFailureWaitsForItsBackoffThenRunsAgain(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        let run = try fixture.enqueue(["a"], maxAttempts: 3)
        let first = try #require(try fixture.claim())
        #expect(try fixture.queue.fail(first, error: "flaky", retryable: true, retryAfter: nil) == .failed)
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

    @Test(arguments: Backend.allCases)
    func aJobOutOfAttemptsIsDiscardedKeepingItsLastError(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        let run = try fixture.enqueue(["a"], maxAttempts: 2)
        let first = try #require(try fixture.claim())
        try fixture.queue.fail(first, error: "first error", retryable: true, retryAfter: nil)
        fixture.clock.advance(milliseconds: 3_600_000)
        let second = try #require(try fixture.claim())
        #expect(second.isLastAttempt)
        #expect(try fixture.queue.fail(second, error: "second error", retryable: true, retryAfter: nil) == .discarded)
        let job = try fixture.queue.job(run.jobIDs[0])
        #expect(job.state == .discarded && job.error == "second error" && job.attempt == 2 && job.finishedAt != nil)
        #expect(throws: JobQueueError.leaseLost(second.jobID, token: 2), "a finished job's claim is stale") {
            try fixture.queue.fail(second, error: "again", retryable: true, retryAfter: nil)
        }
        fixture.clock.advance(milliseconds: 3_600_000)
        #expect(try fixture.claim() == nil)
    }

    @Test(arguments: Backend.allCases)
    func snoozeAndReleaseDoNotUseUpAnAttempt(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        let run = try fixture.enqueue(["a"], maxAttempts: 1)
        let claim = try #require(try fixture.claim())
        try fixture.queue.snooze(claim, until: fixture.clock.nowMilliseconds() + 500)
        #expect(try fixture.claim() == nil)
        fixture.clock.advance(milliseconds: 500)
        let again = try #require(try fixture.claim())
        #expect(again.token == 2 && again.maxAttempts == 2)
        #expect(try fixture.state(run.jobIDs[0]) == .running)
        try fixture.queue.release(again, reason: "shutting down")
        let third = try #require(try fixture.claim())
        #expect(third.token == 3 && third.maxAttempts == 3)
        #expect(try fixture.state(run.jobIDs[0]) == .running)
    }

    @Test(arguments: Backend.allCases)
    func retryingADiscardedJobPutsItsCancelledDescendantsBack(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        let run = try fixture.enqueue(["a", "b", "c"], dependsOn: ["b": ["a"], "c": ["b"]], maxAttempts: 1)
        let claim = try #require(try fixture.claim())
        #expect(try fixture.queue.fail(claim, error: "broken", retryable: false, retryAfter: nil) == .discarded)
        #expect(try fixture.state(run.jobIDs[1]) == .cancelled && fixture.state(run.jobIDs[2]) == .cancelled)
        #expect(try fixture.queue.retry(job: run.jobIDs[0]) == .init(state: .ready, dependents: 2))
        #expect(try fixture.state(run.jobIDs[1]) == .pending && fixture.state(run.jobIDs[2]) == .pending)
        let again = try #require(try fixture.claim())
        #expect(again.token == 2 && again.maxAttempts == 2)
        #expect(throws: JobQueueError.notRetryable(run.jobIDs[1], state: .pending)) { try fixture.queue.retry(job: run.jobIDs[1]) }
    }

    // MARK: Cancellation and history

    @Test(arguments: Backend.allCases)
    func cancellingARunStopsWaitingJobsAndTellsRunningOnesAtTheirHeartbeat(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        let run = try fixture.enqueue(["a", "b", "c"], dependsOn: ["c": ["a"]])
        let running = try #require(try fixture.claim())
        #expect(try fixture.queue.cancel(run: run.runID) == .init(cancelled: 2, running: 1))
        #expect(try fixture.queue.heartbeat(running, leaseMilliseconds: 1_000) == .cancelled)
        try fixture.queue.acknowledgeCancellation(running, reason: "run cancelled")
        #expect(try run.jobIDs.map(fixture.state) == [.cancelled, .cancelled, .cancelled])
        #expect(try fixture.queue.cancel(run: run.runID) == .init(cancelled: 0, running: 0))
        #expect(throws: JobQueueError.unknownRun(RunID(99))) { try fixture.queue.cancel(run: RunID(99)) }
    }

    @Test(arguments: Backend.allCases)
    func pruningRemovesOnlyFinishedRunsOlderThanTheCutoff(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        let old = try fixture.enqueue(["a"])
        try fixture.queue.complete(try #require(try fixture.claim()), output: .null)
        let unfinished = try fixture.enqueue(["b"])
        fixture.clock.advance(milliseconds: 10_000)
        let outcome = try fixture.queue.pruneHistory(olderThanMilliseconds: 5_000)
        #expect(outcome == .init(runs: 1, jobs: 1, events: 3))
        #expect(try !fixture.queue.runExists(old.runID) && fixture.queue.runExists(unfinished.runID))
        #expect(try fixture.count("SELECT count(*) FROM job_events") == 1)
    }

    @Test(arguments: Backend.allCases)
    func everyStateChangeAppendsOneChainedEventAndEventsAreNeverRewritten(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        let run = try fixture.enqueue(["a"])
        let claim = try #require(try fixture.claim())
        try fixture.queue.complete(claim, output: .object([:]))
        let events = try fixture.queue.events(run: run.runID, job: nil, afterID: 0, limit: 100)
        #expect(events.map(\.from) == [nil, .ready, .running])
        #expect(events.map(\.to) == [.ready, .running, .succeeded])
        #expect(events.map(\.attempt) == [0, 1, 1])
        #expect(events.map(\.message) == ["enqueued", "claimed by w1", "completed by w1"])
        #expect(throws: StorageError.self) { try fixture.run("UPDATE job_events SET message = 'rewritten'") }
        #expect(throws: StorageError.self) {
            try fixture.run("INSERT INTO job_events (job_id, run_id, previous_id, attempt, to_state, at) VALUES (1, 1, NULL, 0, 'ready', 0)")
        }
        #expect(try fixture.queue.events(run: run.runID, job: nil, afterID: 0, limit: 100) == events)
    }

    /// The database, not the engine's code, refuses every move the transition table does not allow.
    @Test(arguments: Backend.allCases)
    func databaseAllowsExactlyTheMovesOfTheTransitionTable(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        for from in JobState.allCases {
            for to in JobState.allCases where to != from {
                let start: JobState = from == .pending ? .pending : .ready
                let steps = start == .pending ? [RunDescription.Step(name: "p", kind: "t"), .init(name: "x", kind: "t", dependsOn: ["p"])]
                                              : [RunDescription.Step(name: "x", kind: "t")]
                let job = Int(try fixture.queue.enqueue(RunDescription(kind: "t", steps: steps)).jobIDs.last!.value)
                let paths: [JobState: [JobState]] = [
                    .pending: [], .ready: [], .running: [.running], .succeeded: [.running, .succeeded],
                    .failed: [.running, .failed], .discarded: [.running, .discarded], .cancelled: [.cancelled],
                ]
                for step in paths[from]! { try Self.move(fixture, job: job, to: step) }
                var accepted = true
                do { try Self.move(fixture, job: job, to: to) } catch is StorageError { accepted = false }
                #expect(accepted == from.canMove(to: to), "\(backend) \(from) → \(to): database \(accepted), table \(from.canMove(to: to))")
            }
        }
    }

    static func move(_ fixture: EngineFixture, job: Int, to state: JobState) throws {
        try fixture.run("""
            UPDATE jobs SET state = ?, attempt = 1, lease_owner = ?, lease_expires_at = ?, finished_at = ?, output = ?,
                            updated_at = updated_at + 1, transition_note = 'test' WHERE id = ?
            """, state.rawValue, state == .running ? "w" : nil, state == .running ? 1 : nil as Int?,
            state.isFinished ? 1 : nil as Int?, state == .succeeded ? "{}" : nil, job)
    }

    @Test(arguments: Backend.allCases)
    func constraintsRefuseALeaseOutsideRunningAndInvalidJSON(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        try fixture.enqueue(["a"])
        let before = try fixture.snapshot()
        #expect(throws: StorageError.self) { try fixture.run("UPDATE jobs SET lease_owner = 'w', lease_expires_at = 5 WHERE id = 1") }
        #expect(throws: StorageError.self) { try fixture.run("UPDATE jobs SET state = 'paused' WHERE id = 1") }
        #expect(throws: StorageError.self) { try fixture.run("UPDATE jobs SET input = '{not json' WHERE id = 1") }
        #expect(throws: StorageError.self) { try fixture.run("UPDATE jobs SET checkpoint_pointer = '[' WHERE id = 1") }
        #expect(throws: StorageError.self) { try fixture.run("UPDATE jobs SET run_id = 2 WHERE id = 1") }
        #expect(try fixture.snapshot() == before)
    }

    // MARK: What an idle worker looks at

    @Test(arguments: Backend.allCases)
    func theOutlookSeparatesWorkNowFromWorkScheduledLater(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        let now = fixture.clock.nowMilliseconds()
        try fixture.queue.enqueue(RunDescription(kind: "t", steps: [
            .init(name: "now", kind: "test"), .init(name: "after", kind: "test", dependsOn: ["now"]),
            .init(name: "later", kind: "test", runAt: now + 86_400_000),
            .init(name: "behind", kind: "test", dependsOn: ["later"]),
        ]))
        #expect(try fixture.queue.hasClaimableWork(kinds: ["test"]) && !fixture.queue.hasClaimableWork(kinds: ["other"]))
        let outlook = try fixture.queue.outlook(kinds: ["test"], horizonMilliseconds: JobQueue.WorkOutlook.defaultHorizonMilliseconds)
        #expect(outlook.due == 1 && outlook.running == 0 && outlook.scheduledLater == 1 && outlook.earliestLater == now + 86_400_000)
        #expect(outlook.following + outlook.pendingBehindLater == 2)
        #expect(try fixture.queue.nextWakeTime(kinds: ["test"]) == now)
        let claim = try #require(try fixture.claim(lease: 1_000))
        #expect(try fixture.queue.nextWakeTime(kinds: ["test"]) == now + 1_001, "a lease's expiry wakes a rescuer")
        #expect(try !fixture.queue.hasExpiredLeases())
        fixture.clock.advance(milliseconds: 1_001)
        #expect(try fixture.queue.hasExpiredLeases())
        _ = claim
        let listed = try fixture.queue.jobs(matching: .init(state: .pending, limit: 10))
        #expect(listed.map(\.name) == ["after", "behind"])
        #expect(try fixture.queue.runs(limit: 10).count == 1 && fixture.queue.hasUnfinishedWork(kinds: ["test"]))
    }
}
