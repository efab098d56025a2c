import AdaptCore
import Foundation
import JobQueue
import Storage
import Testing
import TestSupport

/// A train step killed (SIGKILL) while an earlier build kept its checkpoint pointer as the job's newest
/// `checkpoints: …` progress event (job store version 3) resumes under this build from that checkpoint, and ends
/// with the adapter of an undisturbed run.
@Suite(.serialized, .timeLimit(.minutes(10))) struct CheckpointPointerLayoutTests {
    static let pipeline = PipelineFixture.pipeline(steps: 300, checkpointInterval: 10)

    /// Rewrites the job store as the earlier build kept it: the pointer column's value appended as the job's
    /// newest `checkpoints: ` event, the column dropped, the store back at version 3. Returns the pointer moved.
    static func moveToEventLayout(_ path: String, job: JobID) throws -> JSONValue {
        let database = try Database(path: path, durability: .normal)
        let text = try #require(try database.queryOne("SELECT checkpoint_pointer FROM jobs WHERE id = ?", job)?.string("checkpoint_pointer"))
        try database.transaction {
            try database.run("""
                INSERT INTO job_events (job_id, run_id, previous_id, attempt, from_state, to_state, at, message)
                SELECT id, run_id, last_event_id, attempt, 'running', 'running', updated_at, ? FROM jobs WHERE id = ?
                """, "checkpoints: " + text, job)
            try database.execute("ALTER TABLE jobs DROP COLUMN checkpoint_pointer")
            // The columns of the versions after 4 go too (the jobs' timeout_ms): the store is as version 3 left it.
            try database.execute("ALTER TABLE jobs DROP COLUMN timeout_ms")
            let current = Int64(try database.schemaVersion(of: "jobqueue"))
            try database.run("UPDATE adapt_schema SET version = 3 WHERE component = 'jobqueue'")
            let total = try database.scalar("PRAGMA user_version").integerValue ?? 0
            try database.execute("PRAGMA user_version = \(total - (current - 3))")
        }
        #expect(try database.scalar("SELECT count(*) FROM pragma_table_info('jobs') WHERE name = 'checkpoint_pointer'") == .integer(0))
        return try JSON.decode(JSONValue.self, from: text, context: "the moved checkpoint pointer")
    }

    @Test func aTrainStepKilledUnderTheEventPointerLayoutResumesFromItsCheckpointBitExact() async throws {
        let calm = try await PipelineFixture.make(pipeline: Self.pipeline)
        let calmRun = try await calm.enqueue()
        try calm.expectSuccess(await calm.adapt(["work", "--exit-when-idle"]))
        let expected = try #require(try calm.outputs(calmRun)["train"]?["adapter_digest"])

        let fixture = try await PipelineFixture.make(pipeline: Self.pipeline)
        let run = try await fixture.enqueue()
        for kind in ["prune", "sample"] {
            try fixture.expectSuccess(await Executables.runAsync("adapt-\(kind)-worker", ["--state", fixture.statePath, "--exit-when-idle"]))
        }
        let queue = try fixture.queue()
        let train = try #require(try queue.jobs(matching: .init(run: RunID.parse(run), kind: "train")).first)
        let worker = try Executables.start("adapt-train-worker", ["--state", fixture.statePath, "--exit-when-idle", "--lease-ms", "1000"],
                                           outputIn: fixture.directory.url)
        let deadline = Date().addingTimeInterval(120)
        while worker.isRunning, Date() < deadline, try queue.checkpointPointer(job: train.id) == nil {
            try await Task.sleep(for: .milliseconds(5))
        }
        worker.send(SIGKILL)
        _ = try await blocking { worker.wait() }
        #expect(try queue.job(train.id).state == .running, "the train step ended before it was killed: \(worker.stderr)")
        #expect(try queue.checkpointPointer(job: train.id) != nil)

        let moved = try Self.moveToEventLayout(fixture.directory.state.database.path, job: train.id)
        let step = try #require(moved.arrayValue?.first?["step"]?.intValue)
        #expect(step < 300)

        // After the dead worker's lease: this build migrates the store, takes the step back and resumes it.
        try await Task.sleep(for: .milliseconds(1_100))
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let events = try fixture.queue().events(job: train.id).compactMap(\.message)
        #expect(events.contains { $0.hasPrefix("resumed from checkpoint") && $0.contains("at step \(step)") }, "\(events)")
        #expect(try fixture.outputs(run)["train"]?["adapter_digest"] == expected)
    }
}
