import AdaptCore
import Foundation
import JobQueue
import Storage
import Testing

/// The transition table exists three times (the enum, the trigger, the CHECK constraints); these tests prove
/// the copies agree.
@Suite struct StateMachineTests {
    /// Columns that satisfy the table's CHECK constraints for a job resting in `state`.
    static func columns(for state: JobState) -> (owner: String?, expiry: Int64?, finished: Int64?, output: String?) {
        (state == .running ? "w" : nil, state == .running ? 1 : nil,
         state.isFinished ? 1 : nil, state == .succeeded ? "{}" : nil)
    }

    /// Puts job 1 into `state` along allowed moves only (the trigger refuses any other).
    static func drive(_ db: Database, job: Int, to state: JobState) throws {
        let paths: [JobState: [JobState]] = [
            .pending: [], .ready: [], .running: [.running], .succeeded: [.running, .succeeded],
            .failed: [.running, .failed], .discarded: [.running, .discarded], .cancelled: [.cancelled],
        ]
        for step in paths[state]! { try move(db, job: job, to: step) }
    }

    static func move(_ db: Database, job: Int, to state: JobState) throws {
        let c = columns(for: state)
        try db.run("""
            UPDATE jobs SET state = ?, attempt = 1, lease_owner = ?, lease_expires_at = ?, finished_at = ?, output = ?,
                            updated_at = updated_at + 1, transition_note = 'test' WHERE id = ?
            """, state.rawValue, c.owner, c.expiry, c.finished, c.output, job)
    }

    @Test(arguments: JobState.allCases)
    func databaseAllowsExactlyTheMovesOfTheTransitionTable(from: JobState) throws {
        for to in JobState.allCases where to != from {
            let fixture = try QueueFixture()
            let start: JobState = from == .pending ? .pending : .ready
            let steps = start == .pending ? [RunDescription.Step(name: "p", kind: "t"), .init(name: "x", kind: "t", dependsOn: ["p"])]
                                          : [RunDescription.Step(name: "x", kind: "t")]
            try fixture.queue.enqueue(RunDescription(kind: "t", steps: steps))
            let job = start == .pending ? 2 : 1  // the step named x
            try Self.drive(fixture.database, job: job, to: from)
            var accepted = true
            do { try Self.move(fixture.database, job: job, to: to) } catch let error as StorageError {
                accepted = false
                #expect(error.description.contains("SQLite error"))
            }
            #expect(accepted == from.canMove(to: to), "\(from) → \(to): database \(accepted), table \(from.canMove(to: to))")
        }
    }

    @Test func checkConstraintRefusesAStateOutsideTheEnum() throws {
        let fixture = try QueueFixture()
        try fixture.enqueue(["a"])
        #expect(throws: StorageError.self) { try fixture.database.run("UPDATE jobs SET state = 'paused' WHERE id = 1") }
        #expect(throws: StorageError.self) {
            try fixture.database.run("INSERT INTO job_events (job_id, run_id, attempt, to_state, at) VALUES (1, 1, 0, 'paused', 0)")
        }
        // A job is never created running.
        #expect(throws: StorageError.self) {
            try fixture.database.run("""
                INSERT INTO jobs (run_id, name, kind, state, run_at, max_attempts, input, created_at, updated_at, lease_owner,
                                  lease_expires_at, attempt) VALUES (1, 'z', 't', 'running', 0, 1, '{}', 0, 0, 'w', 1, 1)
                """)
        }
    }

    @Test func everyStateChangeAppendsOneEventAndEventsAreNeverRewritten() throws {
        let fixture = try QueueFixture()
        let run = try fixture.enqueue(["a"])
        let claim = try #require(try fixture.claim())
        try fixture.queue.complete(claim, output: .object([:]))
        let events = try fixture.queue.events(run: run.runID)
        #expect(events.map(\.from) == [nil, .ready, .running])
        #expect(events.map(\.to) == [.ready, .running, .succeeded])
        #expect(events.map(\.attempt) == [0, 1, 1])
        #expect(events.allSatisfy { $0.at == fixture.clock.nowMilliseconds() })
        #expect(throws: StorageError.self) { try fixture.database.run("UPDATE job_events SET message = 'x'") }
    }

    @Test func identifiersPrintAndParseAsRunNAndJobN() {
        #expect(RunID(7).description == "run-7")
        #expect(JobID(7).description == "job-7")
        #expect(RunID.parse("run-7") == RunID(7) && RunID.parse("7") == RunID(7))
        #expect(RunID.parse("job-7") == nil && RunID.parse("run-") == nil && RunID.parse("-3") == nil && RunID.parse("0") == nil)
        #expect(JobID.parse("job-12") == JobID(12) && JobID.parse("12") == JobID(12) && JobID.parse("run-12") == nil)
        #expect(Identifier.parse("run-3") == .run(RunID(3)))
        #expect(Identifier.parse("job-3") == .job(JobID(3)))
        #expect(Identifier.parse("3") == .number(3))
        #expect(Identifier.parse("x3") == nil)
    }
}

