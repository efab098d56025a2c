import AdaptCore
import Foundation
import JobQueue
import Testing
import TestSupport

/// A pipeline step's `timeout_seconds` in a real night: `adapt work`'s train worker stops a train step that runs
/// past it (at its next optimizer step, as a cancelled run stops it) and the attempt fails as timed out, with the
/// way out in its error; with no attempt left the step is discarded and the steps after it cancelled.
@Suite(.serialized, .timeLimit(.minutes(10))) struct StepTimeoutNightTests {
    /// A train step far longer than its one-second timeout (3000 optimizer steps on the tiny model), one attempt.
    static let pipeline = """
        {"seed": 7,
         "steps": [{"name": "prune", "kind": "prune"}, {"name": "sample", "kind": "sample", "depends_on": ["prune"]},
                   {"name": "train", "kind": "train", "depends_on": ["sample"], "max_attempts": 1, "timeout_seconds": 1},
                   {"name": "eval", "kind": "eval", "depends_on": ["train"]},
                   {"name": "promote", "kind": "promote", "depends_on": ["eval"]}],
         "train": {"steps": 3000, "checkpoint_interval": 100, "batch_size": 2, "warmup_steps": 2, "max_length": 96,
                   "early_stopping": null, "learning_rate": 0.01},
         "device": {"min_available_memory_mb": 64}}
        """

    @Test func aTrainStepPastItsTimeoutSecondsIsStoppedByItsWorkerAndFailedAsTimedOut() async throws {
        let fixture = try await PipelineFixture.make(pipeline: Self.pipeline)
        let run = try await fixture.enqueue()
        let work = try await fixture.adapt(["work", "--exit-when-idle"])
        #expect(work.status == 0, "\(work.stderr)")
        let runID: RunID = try #require(RunID.parse(run))
        let jobs = try fixture.queue().jobs(matching: .init(run: runID))
        let train = try #require(jobs.first { $0.kind == "train" })
        #expect(train.timeoutMilliseconds == 1_000)
        #expect(train.state == .discarded, "\(train)")
        #expect(train.error == "timed out after 1 s; if the step needs longer, raise its timeout_seconds in the pipeline file "
                + "(timeout_ms in a run description)", "\(train)")
        #expect(jobs.first { $0.kind == "eval" }?.state == .cancelled)
        // The step heard its interruption: its worker did not have to end itself after the grace.
        #expect(!work.stderr.contains("ignored its timeout"), "\(work.stderr)")
    }
}
