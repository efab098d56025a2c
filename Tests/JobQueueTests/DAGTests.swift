import AdaptCore
import JobQueue
import Storage
import Testing

@Suite struct DAGTests {
    @Test func aStepNeverStartsBeforeItsParentsSucceeded() throws {
        let fixture = try QueueFixture()
        // The nightly shape plus a diamond: prune → sample → train → eval → promote, and sample → eval.
        let run = try fixture.enqueue(["promote", "eval", "train", "sample", "prune"],
                                      dependsOn: ["promote": ["eval"], "eval": ["train", "sample"], "train": ["sample"],
                                                  "sample": ["prune"]])
        #expect(try fixture.drain() == ["prune", "sample", "train", "eval", "promote"])
        #expect(try fixture.queue.run(run.runID).state == "succeeded")
    }

    @Test func aDiscardedParentCancelsAllItsDescendantsWithTheReason() throws {
        let fixture = try QueueFixture()
        let run = try fixture.enqueue(["a", "b", "c", "d"], dependsOn: ["b": ["a"], "c": ["b"]], maxAttempts: 1)
        let claim = try #require(try fixture.claim())
        #expect(claim.name == "a")
        #expect(try fixture.queue.fail(claim, error: "boom", retryable: true) == .discarded)
        #expect(try run.jobIDs.map(fixture.state) == [.discarded, .cancelled, .cancelled, .ready])
        #expect(try fixture.queue.job(run.jobIDs[0]).error == "boom")
        #expect(try fixture.queue.job(run.jobIDs[2]).error == "cancelled: parent \(run.jobIDs[0]) was discarded")
        let event = try #require(try fixture.queue.events(job: run.jobIDs[1]).last)
        #expect(event.to == .cancelled && event.message?.contains("\(run.jobIDs[0]) was discarded") == true)
        // d is unaffected and still runs.
        #expect(try fixture.drain() == ["d"])
        #expect(try fixture.queue.run(run.runID).state == "failed")
    }

    @Test func retryingADiscardedJobPutsItsCancelledDependentsBackToPending() throws {
        let fixture = try QueueFixture()
        let run = try fixture.enqueue(["a", "b", "c"], dependsOn: ["b": ["a"], "c": ["b"]], maxAttempts: 1)
        let claim = try #require(try fixture.claim())
        try fixture.queue.fail(claim, error: "boom", retryable: false)
        let outcome = try fixture.queue.retry(job: run.jobIDs[0])
        #expect(outcome == .init(state: .ready, dependents: 2))
        #expect(try run.jobIDs.map(fixture.state) == [.ready, .pending, .pending])
        #expect(try fixture.queue.job(run.jobIDs[0]).maxAttempts == 2)
        #expect(try fixture.drain() == ["a", "b", "c"])
        #expect(try fixture.queue.run(run.runID).state == "succeeded")
        #expect(try fixture.queue.events(job: run.jobIDs[0]).contains { $0.from == .discarded && $0.to == .ready && $0.message == "retried by hand" })
    }

    @Test func claimOrderIsPriorityThenRunAtThenID() throws {
        let fixture = try QueueFixture()
        try fixture.queue.enqueue(RunDescription(kind: "t", steps: [
            .init(name: "late", kind: "test", runAt: fixture.clock.nowMilliseconds() + 10),
            .init(name: "normal", kind: "test"),
            .init(name: "urgent", kind: "test", priority: -5),
            .init(name: "normal2", kind: "test"),
            .init(name: "other-kind", kind: "other", priority: -10),
        ]))
        #expect(try fixture.drain() == ["urgent", "normal", "normal2"])
        fixture.clock.advance(milliseconds: 10)
        #expect(try fixture.drain() == ["late"])
    }
}
