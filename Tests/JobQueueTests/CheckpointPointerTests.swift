import AdaptCore
import JobQueue
import Storage
import Testing
import TestSupport

/// The checkpoint pointer of a resumable step: its own column, written only under a held lease, read by
/// whichever attempt runs the job next; and carried over from the `checkpoints: ` events a version 3 database
/// kept it in.
@Suite struct CheckpointPointerTests {
    static let pointer: JSONValue = .array([.object(["digest": .string(String(repeating: "ab", count: 32)), "step": .int(20)]),
                                            .object(["digest": .string(String(repeating: "cd", count: 32)), "step": .int(10)])])

    @Test func aPointerRecordedUnderALeaseIsReadByTheNextAttemptAndALostLeaseCannotMoveIt() throws {
        let fixture = try QueueFixture()
        let run = try fixture.enqueue(["train"], maxAttempts: 3)
        let job = run.jobIDs[0]
        #expect(try fixture.queue.checkpointPointer(job: job) == nil)
        let first = try #require(try fixture.claim(lease: 1_000))
        try fixture.queue.recordCheckpointPointer(first, Self.pointer)
        #expect(try fixture.queue.checkpointPointer(job: job) == Self.pointer)

        // The first worker goes silent; its lease passes and a second worker takes the job over.
        fixture.clock.advance(milliseconds: 1_001)
        #expect(try fixture.queue.rescueExpiredLeases().count == 1)
        fixture.clock.advance(milliseconds: 60_000)
        let second = try #require(try fixture.claim(owner: "w2", lease: 1_000))
        #expect(second.token == 2)
        #expect(try fixture.queue.checkpointPointer(job: job) == Self.pointer, "the next attempt reads the pointer the lost one left")

        let before = try fixture.snapshot()
        #expect(throws: JobQueueError.leaseLost(job, token: 1)) {
            try fixture.queue.recordCheckpointPointer(first, .array([]))
        }
        #expect(try fixture.queue.checkpointPointer(job: job) == Self.pointer)
        #expect(try fixture.snapshot() == before)

        let moved: JSONValue = .array([.object(["digest": .string(String(repeating: "ef", count: 32)), "step": .int(30)])])
        try fixture.queue.recordCheckpointPointer(second, moved)
        #expect(try JobQueue.unfinishedCheckpointPointers(in: fixture.database) == [job: moved])
        try fixture.queue.complete(second, output: .object([:]))
        #expect(try JobQueue.unfinishedCheckpointPointers(in: fixture.database).isEmpty, "a finished job resumes nothing")
        #expect(throws: JobQueueError.unknownJob(JobID(99))) { try fixture.queue.checkpointPointer(job: JobID(99)) }
    }

    @Test func aVersionThreeDatabaseKeepsResumingFromTheNewestPointerEventOfEachJob() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("adapt.sqlite").path
        let older = #"[{"digest":"\#(String(repeating: "cd", count: 32))","step":10}]"#
        let newest = JSON.canonicalString(Self.pointer)
        do {
            let database = try Database(path: path)
            try database.migrate(Schema(component: "jobqueue", migrations: Array(JobSchema.schema.migrations.prefix(3))))
            // Job 1 was interrupted after two checkpoints; job 2's only pointer event is not JSON; job 3 has none.
            try database.execute("""
                INSERT INTO job_runs (id, kind, name, manifest, created_at, first_job_id, last_job_id) VALUES (1, 'nightly', 'n', '{}', 1, 1, 3);
                INSERT INTO jobs (id, run_id, name, kind, state, run_at, max_attempts, input, created_at, updated_at)
                VALUES (1, 1, 'train', 'train', 'ready', 1, 5, '{}', 1, 1),
                       (2, 1, 'other', 'train', 'ready', 1, 5, '{}', 1, 1),
                       (3, 1, 'eval', 'eval', 'ready', 1, 5, '{}', 1, 1);
                UPDATE jobs SET state = 'running', attempt = 1, lease_owner = 'host/7', lease_expires_at = 99, updated_at = 2;
                """)
            for (job, message) in [(1, "checkpoints: " + older), (1, "step 10/40 loss 2.1000; checkpoint step-10"),
                                   (1, "checkpoints: " + newest), (1, "step 20/40 loss 1.9000"), (2, "checkpoints: [{\"digest\""),
                                   (3, "step 1/1")] {
                try database.run("""
                    INSERT INTO job_events (job_id, run_id, previous_id, attempt, from_state, to_state, at, message)
                    SELECT id, run_id, last_event_id, attempt, 'running', 'running', 3, ? FROM jobs WHERE id = ?
                    """, message, job)
            }
            // A build that reads this database without migrating it (a read-only state) finds the pointers in the events.
            #expect(try JobQueue.unfinishedCheckpointPointers(in: database)[JobID(1)] == Self.pointer)
        }
        let database = try Database(path: path)
        let queue = try JobQueue(database: database)
        #expect(try database.schemaVersion(of: "jobqueue") == JobSchema.schema.migrations.count)
        #expect(try queue.checkpointPointer(job: JobID(1)) == Self.pointer, "the newest pointer event is the pointer")
        #expect(try queue.checkpointPointer(job: JobID(2)) == nil, "a pointer event that is not JSON is not carried over")
        #expect(try queue.checkpointPointer(job: JobID(3)) == nil)
        #expect(try JobQueue.unfinishedCheckpointPointers(in: database) == [JobID(1): Self.pointer])
        #expect(try queue.events(job: JobID(1)).compactMap(\.message).filter { $0.hasPrefix("checkpoints: ") }.count == 2,
                "the events stay as history")
        #expect(throws: StorageError.self, "the column holds JSON only") {
            try database.run("UPDATE jobs SET checkpoint_pointer = 'not json' WHERE id = 3")
        }
    }
}
