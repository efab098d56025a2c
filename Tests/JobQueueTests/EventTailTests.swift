import AdaptCore
import Foundation
import JobQueue
import Storage
import Testing
import TestSupport

/// Following the event stream (`JobEngine.tail`, what `adapt events --follow` reads): on both backends every
/// event once, page by page; on PostgreSQL, also an event whose transaction commits after one with a higher id.
@Suite(.serialized) struct EventTailTests {
    @Test(arguments: Backend.allCases)
    func aFollowerReadingSmallPagesGetsEveryEventOnceInIdOrder(_ backend: Backend) throws {
        let fixture = try EngineFixture(backend)
        let first = try fixture.enqueue(["a", "b", "c"])
        _ = try fixture.drain()
        let second = try fixture.enqueue(["d"])
        var cursor = EventCursor()
        let everything = try fixture.queue.events(run: nil, job: nil, afterID: 0, limit: 1_000)
        let seen = try Self.follow(fixture.queue, run: nil, job: nil, until: everything.count, pageSize: 2, &cursor)
        #expect(seen == everything, "pages of two, in id order, nothing twice")

        var ofFirst = EventCursor()
        let firstEvents = try Self.follow(fixture.queue, run: first.runID, job: nil, until: 9, pageSize: 4, &ofFirst)
        #expect(firstEvents == everything.filter { $0.runID == first.runID })
        let claim = try #require(try fixture.claim())
        try fixture.queue.complete(claim, output: .object([:]))
        var ofSecond = EventCursor()
        #expect(try Self.follow(fixture.queue, run: second.runID, job: nil, until: 3, pageSize: 4, &ofSecond).map(\.to)
                == [.ready, .running, .succeeded])
        #expect(try fixture.queue.tail(run: second.runID, job: nil, after: ofSecond, limit: 4).events.isEmpty)
        #expect(try fixture.queue.remainingEvents(run: second.runID, job: nil, after: ofSecond).isEmpty,
                "nothing remains for a follower that has seen it all")
        #expect(try fixture.queue.tail(run: first.runID, job: nil, after: ofFirst, limit: 4).events.isEmpty,
                "another run's events are not this run's")
    }

    /// The case a reader continuing from the last id it saw gets wrong: job 1's cancellation draws its event id
    /// first but commits after job 2's claim, whose event has the higher id.
    @Test func anEventCommittedAfterOneWithAHigherIdIsStillHandedOutOnce() throws {
        let fixture = try EngineFixture(.postgres)
        try fixture.enqueue(["a", "b"])
        var cursor = EventCursor()
        var seen = try Self.follow(fixture.queue, run: nil, job: nil, until: 2, &cursor)

        let late = try PostgresConnection(try #require(fixture.connectionString))
        try late.execute("BEGIN")
        try late.execute("UPDATE jobs SET state = 'cancelled', finished_at = 1, updated_at = 1, transition_note = 'late' WHERE id = 1")
        let claim = try #require(try fixture.claim(), "the claim skips the job the open transaction holds")
        #expect(claim.jobID == JobID(2))
        let byID = try fixture.queue.events(run: nil, job: nil, afterID: try #require(seen.last).id, limit: 100)
        #expect(byID.map(\.jobID) == [JobID(2)], "read by id, the claim is there and the cancellation's lower id is not")
        let meanwhile = try fixture.queue.tail(run: nil, job: nil, after: cursor, limit: 100)
        #expect(meanwhile.events.isEmpty, "the claim waits while an older transaction is open")
        cursor = meanwhile.next

        try late.execute("COMMIT")
        seen += try Self.follow(fixture.queue, run: nil, job: nil, until: 2, &cursor)
        let all = try fixture.queue.events(run: nil, job: nil, afterID: 0, limit: 100)
        #expect(all.count == 4)
        #expect(seen.map(\.id) == all.map(\.id), "each event once: the cancellation, then the claim")
        #expect(seen.contains { $0.jobID == JobID(1) && $0.to == .cancelled && $0.message == "late" })
    }

    /// The case that filtering a tail by id with the snapshot's horizon would still get wrong: the younger of two
    /// transactions writes the lower id and stays open while the older one writes a higher id and commits.
    @Test func aYoungerTransactionsLowerIdComesAfterAnOlderOnesHigherId() throws {
        let fixture = try EngineFixture(.postgres)
        try fixture.enqueue(["a", "b"])
        var cursor = EventCursor()
        var seen = try Self.follow(fixture.queue, run: nil, job: nil, until: 2, &cursor)
        let target = try #require(fixture.connectionString)
        let older = try PostgresConnection(target), younger = try PostgresConnection(target)
        try older.execute("BEGIN")
        _ = try older.scalar("SELECT pg_current_xact_id()")  // takes its transaction id now
        try younger.execute("BEGIN")
        try younger.execute("UPDATE jobs SET state = 'cancelled', finished_at = 1, updated_at = 1, transition_note = 'younger' WHERE id = 1")
        try older.execute("UPDATE jobs SET state = 'cancelled', finished_at = 1, updated_at = 1, transition_note = 'older' WHERE id = 2")
        try older.execute("COMMIT")
        seen += try Self.follow(fixture.queue, run: nil, job: nil, until: 1, &cursor)
        #expect(seen.last?.message == "older")

        try younger.execute("COMMIT")
        seen += try Self.follow(fixture.queue, run: nil, job: nil, until: 1, &cursor)
        #expect(seen.last?.message == "younger")
        let all = try fixture.queue.events(run: nil, job: nil, afterID: 0, limit: 100)
        #expect(all.map(\.message).suffix(2) == ["younger", "older"], "the younger transaction drew the lower id")
        #expect(seen.map(\.id).sorted() == all.map(\.id) && Set(seen.map(\.id)).count == seen.count)
    }

    /// Across jobs the windows may hand out a higher id first (above); within one job they cannot. A job's later
    /// event is written after the transaction of its earlier one committed (the row lock orders them), so when
    /// the later one's transaction is the older, every window that holds one holds both.
    @Test func aJobsEventsComeInTheirChainOrderWhenTheLaterOnesTransactionIsOlder() throws {
        let fixture = try EngineFixture(.postgres)
        try fixture.enqueue(["a"])
        var cursor = EventCursor()
        var seen = try Self.follow(fixture.queue, run: nil, job: nil, until: 1, &cursor)
        let target = try #require(fixture.connectionString)
        let older = try PostgresConnection(target), younger = try PostgresConnection(target), third = try PostgresConnection(target)
        try older.execute("BEGIN")
        _ = try older.scalar("SELECT pg_current_xact_id()")
        try younger.execute("UPDATE jobs SET state = 'cancelled', finished_at = 1, updated_at = 1, transition_note = 'first' WHERE id = 1")
        try third.execute("BEGIN")
        _ = try third.scalar("SELECT pg_current_xact_id()")  // holds the horizon above both while the older commits
        try older.execute("UPDATE jobs SET state = 'ready', finished_at = NULL, updated_at = 2, transition_note = 'second' WHERE id = 1")
        let waiting = try fixture.queue.tail(run: nil, job: nil, after: cursor, limit: 100)
        #expect(waiting.events.isEmpty, "both wait for the older transaction")
        cursor = waiting.next
        try older.execute("COMMIT")
        seen += try Self.follow(fixture.queue, run: nil, job: nil, until: 2, &cursor)
        #expect(seen.suffix(2).map(\.message) == ["first", "second"])
        let written = try older.query("SELECT xact::text::bigint AS x FROM job_events WHERE job_id = 1 ORDER BY id DESC LIMIT 2", arguments: [])
        #expect(written.compactMap { $0.int64("x") }.count == 2 && written[0].int64("x")! < written[1].int64("x")!,
                "the later event's transaction is the older")
        try third.execute("ROLLBACK")
    }

    @Test func aFinishedRunsLastEventsAreNotHeldBackByAnUnrelatedOpenTransaction() throws {
        let fixture = try EngineFixture(.postgres)
        let run = try fixture.enqueue(["a"])
        var cursor = EventCursor()
        _ = try Self.follow(fixture.queue, run: run.runID, job: nil, until: 1, &cursor)
        let other = try PostgresConnection(try #require(fixture.connectionString))
        try other.execute("BEGIN")
        _ = try other.scalar("SELECT pg_current_xact_id()")
        let claim = try #require(try fixture.claim())
        try fixture.queue.complete(claim, output: .object([:]))
        let meanwhile = try fixture.queue.tail(run: run.runID, job: nil, after: cursor, limit: 100)
        #expect(meanwhile.events.isEmpty, "held back by the open transaction")
        cursor = meanwhile.next
        #expect(try fixture.queue.remainingEvents(run: run.runID, job: nil, after: cursor).map(\.to) == [.running, .succeeded])
        try other.execute("ROLLBACK")
    }

    @Test func eventsWrittenBeforeTheirTransactionWasRecordedAreHandedOutFirstAndOnce() throws {
        let target = try PostgresCluster.shared().makeDatabase()
        let before = try PostgresConnection(target)
        try before.migrate(Schema(component: "jobqueue", migrations: [PostgresJobSchema.schema.migrations[0]]))
        try before.execute("""
            INSERT INTO job_runs (kind, name, manifest, created_at, first_job_id, last_job_id) VALUES ('t', 't', '{}', 0, 1, 1);
            INSERT INTO jobs (id, run_id, name, kind, state, run_at, max_attempts, input, created_at, updated_at)
            VALUES (1, 1, 'a', 'test', 'ready', 0, 3, '{}', 0, 0)
            """)
        let queue = try PostgresJobQueue(connectionString: target)
        #expect(try before.scalar("SELECT xact::text FROM job_events WHERE id = 1") == .text("0"))
        let claim = try #require(try queue.claim(kinds: ["test"], owner: "w1", leaseMilliseconds: 60_000))
        try queue.complete(claim, output: .object([:]))
        var cursor = EventCursor()
        let seen = try Self.follow(queue, run: nil, job: nil, until: 3, pageSize: 1, &cursor)
        #expect(seen.map(\.to) == [.ready, .running, .succeeded])
    }

    /// Tails until `count` more events came. The horizon is the whole server's, and other tests' transactions
    /// on the shared cluster can hold it back for a moment, so it looks again for a while before giving up.
    static func follow(_ queue: any JobEngine, run: RunID?, job: JobID?, until count: Int, pageSize: Int = 100,
                       _ cursor: inout EventCursor) throws -> [EventRecord] {
        var seen: [EventRecord] = []
        let deadline = Date().addingTimeInterval(30)
        while seen.count < count && Date() < deadline {
            let page = try queue.tail(run: run, job: job, after: cursor, limit: pageSize)
            #expect(page.events.count <= pageSize)
            seen += page.events
            cursor = page.next
            if page.events.isEmpty { Thread.sleep(forTimeInterval: 0.01) }
        }
        #expect(seen.count == count, "\(seen.count) of \(count) events came")
        return seen
    }
}
