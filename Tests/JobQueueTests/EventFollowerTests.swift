import AdaptCore
import Foundation
import JobQueue
import Storage
import Testing
import TestSupport

/// How `adapt events --follow` learns of new events on PostgreSQL: a listed follower is notified when a transaction
/// that wrote events commits, and nobody is notified while no live follower is listed.
@Suite(.serialized) struct EventFollowerTests {
    @Test func aFollowerIsWokenWhenATransactionWritingEventsCommits() throws {
        let fixture = try EngineFixture(.postgres)
        let follower = try PostgresEventFollower(connectionString: try #require(fixture.connectionString))
        #expect(try !follower.waitForEvents(timeoutMilliseconds: 50), "nothing was written yet")
        try fixture.enqueue(["a"])
        #expect(try follower.waitForEvents(timeoutMilliseconds: 10_000))

        let claim = try #require(try fixture.claim())
        try fixture.queue.complete(claim, output: .object([:]))
        #expect(try follower.waitForEvents(timeoutMilliseconds: 10_000), "a claim and a completion write events too")
    }

    @Test func transactionsWritingEventsNotifyNobodyWhileNoLiveFollowerIsListed() throws {
        let fixture = try EngineFixture(.postgres)
        let target = try #require(fixture.connectionString)
        let eavesdropper = try PostgresConnection(target)
        try eavesdropper.listen(PostgresJobSchema.eventChannel)
        try fixture.enqueue(["a"])
        #expect(try eavesdropper.waitForNotifications(timeoutMilliseconds: 200).isEmpty, "no follower: no notification")

        // A follower whose session ended without unlisting itself (killed) leaves its row behind.
        let departed = try PostgresConnection(target)
        let pid = try #require(try departed.scalar("SELECT pg_backend_pid()").integerValue)
        try fixture.run("INSERT INTO job_event_followers (pid) VALUES (?)", pid)
        #expect(try fixture.count("SELECT pg_terminate_backend(\(pid), 10000)::int") == 1, "waits until it has ended")
        try fixture.enqueue(["b"])
        #expect(try eavesdropper.waitForNotifications(timeoutMilliseconds: 200).isEmpty, "a dead follower is skipped")

        do {
            let follower = try PostgresEventFollower(connectionString: target)
            #expect(try fixture.count("SELECT count(*) FROM job_event_followers WHERE pid = \(pid)") == 0,
                    "a new follower deletes the rows of ended sessions")
            try fixture.enqueue(["c"])
            #expect(try follower.waitForEvents(timeoutMilliseconds: 10_000))
            #expect(try !eavesdropper.waitForNotifications(timeoutMilliseconds: 10_000).isEmpty, "while one follows")
        }
        #expect(try fixture.count("SELECT count(*) FROM job_event_followers") == 0, "a follower unlists itself when done")
        try fixture.enqueue(["d"])
        #expect(try eavesdropper.waitForNotifications(timeoutMilliseconds: 200).isEmpty)
    }
}
