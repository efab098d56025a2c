import AdaptCore
import Foundation
import JobQueue
import Storage
import Testing
import TestSupport

// What a supervisor asks of the job table: hand back exactly a dead worker's jobs, and tell work due now from
// work scheduled for later.

@Test func releasingADeadWorkersLeasesMovesExactlyItsJobsAndCountsTheAttempt() throws {
    let f = try QueueFixture()
    let ids = try f.enqueue(["a", "b", "c"], maxAttempts: 2).jobIDs
    let dead = try #require(try f.claim(owner: "host/work-1.1/100"))
    let alive = try #require(try f.claim(owner: "host/work-1.2/101"))
    let rescued = try f.queue.releaseLeases(heldBy: "host/work-1.1/100", cause: "pid 100 killed by signal 9")
    #expect(rescued == [JobQueue.Rescued(job: dead.jobID, attempt: 1, state: .ready)])
    #expect(try f.state(dead.jobID) == .ready)
    #expect(try f.state(alive.jobID) == .running, "another worker's lease was taken")
    let job = try f.queue.job(dead.jobID)
    #expect(job.attempt == 1 && job.maxAttempts == 2, "the attempt must count, not be given back")
    let event = try #require(try f.queue.events(job: dead.jobID).last)
    #expect(event.to == .ready)
    #expect(event.message?.contains("worker host/work-1.1/100 died (pid 100 killed by signal 9) during attempt 1") == true,
            "\(event.message ?? "no message")")
    // The next claim is attempt 2, the last: a second death discards the job.
    let again = try #require(try f.claim(owner: "host/work-1.3/102"))
    #expect(again.jobID == dead.jobID && again.attempt == 2)
    #expect(try f.queue.releaseLeases(heldBy: "host/work-1.3/102", cause: "exit status 1").map(\.state) == [.discarded])
    #expect(ids.count == 3)
}

@Test func aStaleAttemptsOwnerCannotReleaseTheJobAfterItWasReclaimed() throws {
    let f = try QueueFixture()
    try f.enqueue(["a"])
    let first = try #require(try f.claim(owner: "w-old", lease: 100))
    f.clock.advance(milliseconds: 200)
    #expect(try f.queue.rescueExpiredLeases().count == 1)
    let second = try #require(try f.claim(owner: "w-new"))
    #expect(second.jobID == first.jobID)
    #expect(try f.queue.releaseLeases(heldBy: "w-old", cause: "exit status 1").isEmpty)
    #expect(try f.queue.job(first.jobID).leaseOwner == "w-new")
    #expect(try f.state(first.jobID) == .running)
}

@Test func workDueWithinTheHorizonCountsButARunScheduledLaterDoesNot() throws {
    let f = try QueueFixture()
    let now = f.clock.nowMilliseconds()
    let later = now + 86_400_000
    func step(_ name: String, runAt: Int64?, after: [String] = []) -> RunDescription.Step {
        RunDescription.Step(name: name, kind: "test", input: .object([:]), dependsOn: after, runAt: runAt)
    }
    // A run scheduled for tomorrow, with a second step behind it.
    try f.queue.enqueue(RunDescription(kind: "test", steps: [step("first", runAt: later), step("second", runAt: nil, after: ["first"])]))
    var outlook = try f.queue.outlook(kinds: ["test"], horizonMilliseconds: 120_000)
    #expect(!outlook.hasWorkNow)
    #expect(outlook.scheduledLater == 1 && outlook.pendingBehindLater == 1 && outlook.earliestLater == later)
    #expect(outlook.waitingDescription(now: now).contains("1 step scheduled for later (earliest \(Timestamp.iso8601(later)), in 24 h)"))
    // Other kinds are not this supervisor's work.
    #expect(try !f.queue.outlook(kinds: ["other"]).hasWorkNow)

    // A retry whose backoff ends within the horizon is work to wait for.
    try f.queue.enqueue(RunDescription(kind: "test", steps: [step("retry", runAt: nil)]))
    let claim = try #require(try f.claim())
    try f.queue.fail(claim, error: "transient", retryable: true, retryAfter: 30_000)
    outlook = try f.queue.outlook(kinds: ["test"], horizonMilliseconds: 120_000)
    #expect(outlook.hasWorkNow && outlook.due == 1)
    // The same retry seen with a shorter horizon waits for later.
    outlook = try f.queue.outlook(kinds: ["test"], horizonMilliseconds: 10_000)
    #expect(!outlook.hasWorkNow && outlook.scheduledLater == 2 && outlook.earliestLater == now + 30_000)

    // A running job is work now, and so is the pending step behind a due one.
    f.clock.advance(milliseconds: 30_000)
    _ = try #require(try f.claim())
    outlook = try f.queue.outlook(kinds: ["test"], horizonMilliseconds: 120_000)
    #expect(outlook.hasWorkNow && outlook.running == 1)
}

@Test func aWorkerToldToExitWhenIdleDoesNotWaitForAStepScheduledForTomorrow() async throws {
    let directory = TemporaryDirectory()
    let state = directory.file("state").path
    let tomorrow = Int64(Date().timeIntervalSince1970 * 1000) + 86_400_000
    let description = #"{"kind": "later", "steps": [{"name": "a", "kind": "noop", "run_at": \#(tomorrow)}]}"#
    let enqueued = try await Executables.runAsync("adapt", ["--state", state, "enqueue", "run", "-"], input: description)
    #expect(enqueued.status == 0, "\(enqueued.stderr)")
    let worker = try Executables.start("adapt", ["--state", state, "worker", "--kinds", "noop", "--exit-when-idle"],
                                       outputIn: directory.url)
    let deadline = Date().addingTimeInterval(Slowdown.scaled(seconds: 30))
    while worker.isRunning, Date() < deadline { try await Task.sleep(for: .seconds(0.05)) }
    #expect(!worker.isRunning, "the worker waits for tomorrow's step")
    if worker.isRunning { worker.send(SIGKILL) }
    #expect(await worker.exited() == 0, "\(worker.stderr)")
}
