import AdaptCore
import Foundation
import JobQueue
import Storage
import TestSupport
import Testing

/// An enqueue leases its new jobs to workers waiting for them, in its own transaction (`PostgresJobSchema.handOffs`),
/// and tells each one on its listening session's channel; everything else still goes through the usual claim.
@Suite(.serialized) struct PostgresHandOffTests {
    let request = ClaimRequest(kinds: ["test"], owner: "waiter", leaseMilliseconds: 60_000)

    /// The fixture and a second engine, as a waiting worker's host.
    func waitingHost() throws -> (EngineFixture, PostgresJobQueue) {
        let fixture = try EngineFixture(.postgres)
        let waiter = try PostgresJobQueue(connectionString: try #require(fixture.connectionString), clock: fixture.clock)
        return (fixture, waiter)
    }

    func row(_ fixture: EngineFixture, _ id: JobID) throws -> (state: String, owner: String?, attempt: Int64, note: String?) {
        let row = try #require(try (fixture.queue as! PostgresJobQueue).connection.queryOne(
            "SELECT state, lease_owner, attempt, transition_note FROM jobs WHERE id = $1", id))
        return (row.string("state") ?? "", row.string("lease_owner"), row.int64("attempt") ?? -1, row.string("transition_note"))
    }

    @Test func aJobEnqueuedWhileAWorkerOffersASlotIsLeasedToItBeforeTheEnqueueReturns() throws {
        let (fixture, waiter) = try waitingHost()
        try waiter.offerWaitingSlots(1, for: request)
        let id = try fixture.enqueue(["a"]).jobIDs[0]
        let stored = try row(fixture, id)
        #expect(stored.state == "running" && stored.owner == "waiter" && stored.attempt == 1)
        #expect(stored.note == "claimed by waiter at enqueue")

        let handed = try waiter.waitForWork(kinds: ["test"], timeoutMilliseconds: 5_000).handed
        let claim = try #require(handed.first)
        #expect(handed.count == 1)
        #expect(claim.jobID == id && claim.token == 1 && claim.owner == "waiter" && claim.name == "a" && claim.kind == "test")
        #expect(claim.input == .object(["name": .string("a")]) && claim.leaseMilliseconds == 60_000 && claim.maxAttempts == 3)
        try waiter.complete(claim, output: .int(1))
        #expect(try fixture.state(id) == .succeeded)
        #expect(try fixture.count("SELECT count(*) FROM job_events WHERE job_id = \(id.value)") == 3, "ready, running, succeeded")

        // The one slot offered was taken: the next job waits for a claim.
        let second = try fixture.enqueue(["b"]).jobIDs[0]
        #expect(try fixture.state(second) == .ready)
        #expect(try fixture.count("SELECT free_slots FROM job_waiters WHERE owner = 'waiter'") == 0)
    }

    /// The worker learns from each new offer how many of the slots it offered before were taken meanwhile.
    @Test func aNewOfferSaysHowManyFreeSlotsTheOldOneStillHad() throws {
        let (fixture, waiter) = try waitingHost()
        #expect(try waiter.offerWaitingSlots(3, for: request) == nil, "no offer before")
        try fixture.enqueue(["a"])
        #expect(try waiter.offerWaitingSlots(3, for: request) == 2, "one slot was taken by the enqueue")
        #expect(try waiter.offerWaitingSlots(1, for: request) == 3)
        #expect(try fixture.count("SELECT free_slots FROM job_waiters WHERE owner = 'waiter'") == 1)
        #expect(try waiter.offerWaitingSlots(0, for: request) == 1)
        #expect(try waiter.offerWaitingSlots(0, for: request) == nil, "withdrawn already")
    }

    @Test func onlyTheOfferedSlotsAndKindsAreFilledInClaimOrder() throws {
        let (fixture, waiter) = try waitingHost()
        try waiter.offerWaitingSlots(2, for: request)
        let steps = ["p", "q", "r"].map { RunDescription.Step(name: $0, kind: "test", priority: $0 == "r" ? -1 : 0) }
            + [RunDescription.Step(name: "o", kind: "other")]
        let ids = try fixture.queue.enqueue(RunDescription(kind: "t", steps: steps)).jobIDs
        #expect(try ids.map { try row(fixture, $0).state } == ["running", "ready", "running", "ready"],
                "the first in claim order (r has the lower priority number), and no job of another kind")
        #expect(Set(try waiter.waitForWork(kinds: ["test"], timeoutMilliseconds: 5_000).handed.map(\.jobID)) == [ids[0], ids[2]])

        try waiter.offerWaitingSlots(0, for: request)
        #expect(try fixture.count("SELECT count(*) FROM job_waiters") == 0, "a withdrawn offer leaves no row")
    }

    @Test func aHandedJobWakesNoOtherWorkerAndAnUnhandedOneStillDoes() throws {
        let (fixture, waiter) = try waitingHost()
        let other = try PostgresJobQueue(connectionString: try #require(fixture.connectionString), clock: fixture.clock)
        try other.startListening()
        try waiter.offerWaitingSlots(1, for: request)
        try fixture.enqueue(["handed"])
        #expect(try !other.waitForWork(kinds: ["test"], timeoutMilliseconds: 300).notified)
        try fixture.enqueue(["claimable"])
        #expect(try other.waitForWork(kinds: ["test"], timeoutMilliseconds: 5_000).notified)
    }

    @Test func aWaiterWhoseSessionEndedIsForgottenAndHandedNothing() throws {
        let fixture = try EngineFixture(.postgres)
        let target = try #require(fixture.connectionString)
        do {
            let gone = try PostgresJobQueue(connectionString: target, clock: fixture.clock)
            try gone.offerWaitingSlots(4, for: request)
        }
        // The server ends the session (and its lock) a moment after the client closed it.
        let deadline = Date().addingTimeInterval(10)
        while try fixture.count("""
            SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = \(0x61_64_77_74)
            AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
            """) > 0,
              Date() < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
        let id = try fixture.enqueue(["a"]).jobIDs[0]
        #expect(try fixture.state(id) == .ready)
        #expect(try fixture.count("SELECT count(*) FROM job_waiters") == 0)
    }

    @Test func aClaimTooLargeForANotificationIsLeftForAnOrdinaryClaim() throws {
        let (fixture, waiter) = try waitingHost()
        try waiter.offerWaitingSlots(1, for: request)
        let big = String(repeating: "x", count: 9_000)
        let id = try fixture.queue.enqueue(RunDescription(kind: "t", steps: [
            .init(name: "big", kind: "test", input: .object(["text": .string(big)]))])).jobIDs[0]
        #expect(try fixture.state(id) == .ready)
        #expect(try waiter.waitForWork(kinds: ["test"], timeoutMilliseconds: 5_000).notified)
        #expect(try waiter.claim(request)?.input == .object(["text": .string(big)]))
    }
}
