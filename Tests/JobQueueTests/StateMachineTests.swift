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
            try fixture.database.run("""
                INSERT INTO job_events (job_id, run_id, previous_id, attempt, to_state, at)
                VALUES (1, 1, (SELECT last_event_id FROM jobs WHERE id = 1), 0, 'paused', 0)
                """)
        }
        // A job is never created running (the run's range is widened so that only the state is wrong).
        try fixture.database.run("UPDATE job_runs SET last_job_id = 2 WHERE id = 1")
        #expect(throws: StorageError.self) {
            try fixture.database.run("""
                INSERT INTO jobs (id, run_id, name, kind, state, run_at, max_attempts, input, created_at, updated_at,
                                  lease_owner, lease_expires_at, attempt) VALUES (2, 1, 'z', 't', 'running', 0, 1, '{}', 0, 0, 'w', 1, 1)
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

    @Test(arguments: [(2, 1), (1, 2), (5, 1)])
    func aJobOutsideItsRunsIdRangeIsRefused(id: Int, run: Int) throws {
        let fixture = try QueueFixture()
        try fixture.enqueue(["a"])
        #expect(throws: StorageError.self) {
            try fixture.database.run("""
                INSERT INTO jobs (id, run_id, name, kind, state, run_at, max_attempts, input, created_at, updated_at)
                VALUES (?, ?, 'z', 't', 'ready', 0, 1, '{}', 0, 0)
                """, id, run)
        }
        #expect(try fixture.count("SELECT count(*) FROM jobs") == 1)
    }

    @Test func aJobMovedToAnotherRunIsRefused() throws {
        let fixture = try QueueFixture()
        try fixture.enqueue(["a"])
        #expect(throws: StorageError.self) { try fixture.database.run("UPDATE jobs SET run_id = 2 WHERE id = 1") }
        #expect(try fixture.count("SELECT count(*) FROM jobs WHERE run_id = 1") == 1)
    }

    static let eventInsert = """
        INSERT INTO job_events (job_id, run_id, previous_id, attempt, from_state, to_state, at)
        VALUES (?, 1, ?, 0, 'ready', 'ready', 0)
        """

    /// Job 2's last event is event 2: a stale pointer, no pointer, another job's event and no job are refused.
    @Test(arguments: [(2, SQLValue.integer(1)), (2, .null), (1, .integer(2)), (3, .null)])
    func anEventThatDoesNotContinueItsJobsChainIsRefused(job: Int, previous: SQLValue) throws {
        let fixture = try QueueFixture()
        try fixture.enqueue(["a", "b"])
        #expect(throws: StorageError.self) {
            try fixture.database.run(Self.eventInsert, arguments: [Int64(job), previous])
        }
        #expect(try fixture.count("SELECT count(*) FROM job_events") == 2)
    }

    @Test func anEventThatContinuesItsJobsChainIsRecorded() throws {
        let fixture = try QueueFixture()
        try fixture.enqueue(["a", "b"])
        let insert = Self.eventInsert
        try fixture.database.run(insert, arguments: [Int64(2), SQLValue.integer(2)])
        #expect(try fixture.count("SELECT last_event_id FROM jobs WHERE id = 2") == 3)
        #expect(try fixture.queue.events(job: JobID(2)).map(\.id) == [2, 3])
    }

    @Test func eventsOfARunOrJobAreFoundAfterAGivenEvent() throws {
        let fixture = try QueueFixture()
        let first = try fixture.enqueue(["a", "b"], dependsOn: ["b": ["a"]])
        let other = try fixture.enqueue(["c"])
        while let claim = try fixture.claim() { try fixture.queue.complete(claim, output: .null) }
        let all = try fixture.queue.events()
        let ofFirst = all.filter { $0.runID == first.runID }
        #expect(ofFirst.count == 7 && all.count == 10)
        #expect(try fixture.queue.events(run: first.runID) == ofFirst)
        #expect(try fixture.queue.events(run: first.runID, afterID: ofFirst[3].id) == Array(ofFirst[4...]))
        #expect(try fixture.queue.events(run: first.runID, afterID: ofFirst[3].id, limit: 2) == Array(ofFirst[4...5]))
        #expect(try fixture.queue.events(job: other.jobIDs[0]) == all.filter { $0.jobID == other.jobIDs[0] })
        #expect(try fixture.queue.events(run: first.runID, job: other.jobIDs[0]).isEmpty)
        #expect(try fixture.queue.events(run: RunID(99)).isEmpty)
        #expect(try fixture.queue.jobs(matching: .init(run: other.runID)).map(\.id) == other.jobIDs)
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

