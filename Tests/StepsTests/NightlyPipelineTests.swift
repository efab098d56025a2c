import AdaptCore
import Foundation
import JobQueue
import Pipelines
import Testing
import TestSupport

/// The whole pipeline on the tiny model, with the five worker executables as separate processes.
@Suite(.serialized) struct NightlyPipelineTests {
    @Test func nightlyRunCompletesThroughSeparateWorkerProcesses() async throws {
        let fixture = try await PipelineFixture.make()
        let run = try await fixture.enqueue()
        let work = try await fixture.adapt(["work", "--exit-when-idle", "--json"])
        try fixture.expectSuccess(work)
        for kind in ["prune", "sample", "train", "eval", "promote"] {
            #expect(work.stderr.contains("started \(kind) worker"), "no \(kind) worker process was started")
        }

        let queue = try fixture.queue()
        let record = try queue.run(try #require(RunID.parse(run)))
        #expect(record.isFinished && record.counts[.succeeded] == 5)
        let outputs = try fixture.outputs(run)
        // Every step recorded its digests in the job output and in the run's manifest.
        for name in ["prune", "sample", "train", "eval", "promote"] {
            let digests = try #require(outputs[name]?["digests"])
            #expect(record.manifest["step_digests"]?[name] == digests)
        }
        #expect(record.manifest["base_model"]?["digest"]?.stringValue == outputs["train"]?["inputs"]?["base_model"]?.stringValue)
        #expect(outputs["train"]?["steps"]?.intValue == 16)
        #expect(outputs["train"]?["losses"]?.arrayValue?.count == 16)
        let gate = try #require(outputs["eval"]?["gate"])
        for field in ["n", "statistic", "p_value", "method", "zero_method", "alternative", "median_difference", "effect_size", "outcome"] {
            #expect(gate[field] != nil, "the gate report lacks \(field)")
        }
        #expect(gate["alternative"]?.stringValue == "less")
        let outcome = try #require(outputs["eval"]?["outcome"]?.stringValue)
        #expect(outputs["promote"]?["promoted"]?.boolValue == (outcome == "better"))

        // The candidate is registered whatever the verdict; active only when better.
        let list = try await fixture.adapt(["registry", "list", "--json"])
        try fixture.expectSuccess(list)
        let versions = try #require(try JSON.decode(JSONValue.self, from: list.stdout, context: "registry list").arrayValue)
        #expect(versions.count == 1)
        #expect(versions.first?["active"]?.boolValue == (outcome == "better"))
    }

    @Test func theNextNightComparesWithThePromotedAdapterFromCachedScoresAndReplays() async throws {
        let fixture = try await PipelineFixture.make()
        let first = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let night1 = try fixture.outputs(first)
        try #require(night1["promote"]?["promoted"]?.boolValue == true, "the first night must promote for this test")
        // The promote step left the promoted adapter where llama-server and Ollama find it.
        let exports = fixture.directory.state.root.appendingPathComponent("exports/logbook")
        #expect(FileManager.default.fileExists(atPath: exports.appendingPathComponent("active.gguf").path))
        let modelfile = try String(contentsOf: exports.appendingPathComponent("Modelfile"), encoding: .utf8)
        #expect(modelfile.hasSuffix("tiny.gguf\nADAPTER ./active.gguf\n"), "\(modelfile)")

        let result = try await fixture.adapt(["enqueue", "nightly", "--lineage", "logbook", "--pipeline", fixture.pipelinePath,
                                        "--model", "tiny.gguf", "--night", "2026-12-01", "--seed", "8", "--json"])
        try fixture.expectSuccess(result)
        let second = try #require(try JSON.decode(JSONValue.self, from: result.stdout, context: "enqueue")["run_id"]?.stringValue)
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let eval = try #require(try fixture.outputs(second)["eval"])
        #expect(eval["incumbent"]?["version"]?.stringValue == "logbook/v1")
        #expect(eval["inputs"]?["incumbent_adapter"] == night1["train"]?["adapter_blob"])
        // Last night's candidate scores are tonight's incumbent scores, read from the cache, not recomputed.
        #expect(eval["timing"]?["incumbent_scores_cached"]?.intValue == eval["held_out_examples"]?.intValue)
        #expect(eval["incumbent_scores"] == night1["eval"]?["candidate_scores"])

        // Replay recomputes them in an empty scratch state and gets the same bits.
        let replay = try await fixture.adapt(["replay", second, "--check", "--json"])
        #expect(replay.status == 0, "\(replay.stdout)")
    }

    @Test func enqueueingTheSameNightTwiceReturnsTheFirstRun() async throws {
        let fixture = try await PipelineFixture.make(importData: false)
        let first = try await fixture.adapt(["enqueue", "nightly", "--lineage", "logbook", "--model", "tiny.gguf", "--night", "2026-12-01", "--json"])
        let second = try await fixture.adapt(["enqueue", "nightly", "--lineage", "logbook", "--model", "tiny.gguf", "--night", "2026-12-01", "--json"])
        try fixture.expectSuccess(first)
        try fixture.expectSuccess(second)
        let a = try JSON.decode(JSONValue.self, from: first.stdout, context: "first")
        let b = try JSON.decode(JSONValue.self, from: second.stdout, context: "second")
        #expect(a["existing"]?.boolValue == false && b["existing"]?.boolValue == true)
        #expect(a["run_id"] == b["run_id"] && a["job_ids"] == b["job_ids"])
        #expect(a["job_ids"]?.arrayValue?.count == 5)
    }

    @Test func enqueueWithAMissingModelStoresNothing() async throws {
        let fixture = try await PipelineFixture.make(importData: false)
        let result = try await fixture.adapt(["enqueue", "nightly", "--lineage", "logbook", "--model", "absent.gguf", "--json"])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("absent.gguf"))
        #expect(try fixture.queue().runs().isEmpty)
    }

    @Test func eachStepsLeaseSecondsBecomesItsJobsLease() async throws {
        let fixture = try await PipelineFixture.make(importData: false)
        let run = try await fixture.enqueue()
        let runID: RunID = try #require(RunID.parse(run))
        let jobs = try fixture.queue().jobs(matching: .init(run: runID))
        let pipeline = try Pipeline.load(contentsOf: URL(fileURLWithPath: fixture.pipelinePath))
        #expect(jobs.count == pipeline.steps.count)
        for step in pipeline.steps {
            #expect(jobs.first { $0.name == step.name }?.leaseMilliseconds == Int64(step.leaseSeconds) * 1000, "\(step.name)")
        }
    }

    @Test func eachStepsTimeoutSecondsBecomesItsJobsTimeoutAndShowPrintsIt() async throws {
        let fixture = try await PipelineFixture.make(importData: false)
        let run = try await fixture.enqueue()
        let runID: RunID = try #require(RunID.parse(run))
        let jobs = try fixture.queue().jobs(matching: .init(run: runID))
        let pipeline = try Pipeline.load(contentsOf: URL(fileURLWithPath: fixture.pipelinePath))
        for step in pipeline.steps {
            let job = try #require(jobs.first { $0.name == step.name })
            #expect(job.timeoutMilliseconds == step.timeoutSeconds.map { Int64($0) * 1000 }, "\(step.name)")
        }
        // The fixture's pipeline lists no steps, so it has the nightly pipeline's, and their timeouts.
        let train = try #require(jobs.first { $0.kind == "train" })
        let shown = try await fixture.adapt(["show", train.id.description, "--json"])
        try fixture.expectSuccess(shown)
        #expect(try JSON.decode(JSONValue.self, from: shown.stdout, context: "show")["timeout_ms"] == .int(10_800_000))
    }

    @Test func theManifestRecordsPipelineSeedThreadsAndModel() async throws {
        let fixture = try await PipelineFixture.make(importData: false)
        let run = try await fixture.enqueue(extra: ["--seed", "42"])
        let manifest = try fixture.queue().run(try #require(RunID.parse(run))).manifest
        #expect(manifest["seed"]?.intValue == 42)
        #expect(manifest["blas_threads"]?.stringValue == "auto")
        #expect(manifest["pipeline_digest"]?.stringValue?.count == 64)
        #expect(manifest["base_model"]?["name"]?.stringValue == "tiny.gguf")
        let model = fixture.directory.state.models.appendingPathComponent("tiny.gguf")
        #expect(manifest["base_model"]?["digest"]?.stringValue == (try Digest.sha256(fileAt: model)).hex)
        #expect(manifest["step_digests"] == .object([:]))
    }
}

/// A night with nothing to train on ends with a clear reason, not five retries.
@Test func aLineageWithoutDataDiscardsTheTrainStepAtOnceWithTheReason() async throws {
    let fixture = try await PipelineFixture.make(importData: false)
    let run = try #require(RunID.parse(try await fixture.enqueue()))
    try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
    let jobs = try fixture.queue().jobs(matching: .init(run: run))
    let train = try #require(jobs.first { $0.kind == "train" })
    #expect(train.state == .discarded)
    #expect(train.attempt == 1)
    #expect(train.error?.contains("no training example of logbook") == true)
    #expect(jobs.filter { $0.kind == "eval" || $0.kind == "promote" }.allSatisfy { $0.state == .cancelled })
}

/// The training module's own "nothing to train on" (every drawn example longer than `max_length`) is as permanent
/// as the sample step's: the step is discarded on its first attempt with the reason, not retried through backoff.
@Test func aTrainStepWhoseExamplesAllExceedTheMaximumLengthIsDiscardedAtOnceWithTheReason() async throws {
    let pipeline = PipelineFixture.pipeline().replacingOccurrences(of: "\"max_length\": 96", with: "\"max_length\": 8")
    let fixture = try await PipelineFixture.make(pipeline: pipeline)
    let run = try #require(RunID.parse(try await fixture.enqueue()))
    try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
    let train = try #require(try fixture.queue().jobs(matching: .init(run: run)).first { $0.kind == "train" })
    #expect(train.state == .discarded)
    #expect(train.attempt == 1, "attempt \(train.attempt): \(train.error ?? "")")
    #expect(train.error?.contains("nothing to train on") == true, "\(train.error ?? "")")
}

/// `train.schedule: linear` runs (warm-up, then a straight line down to 0.1 × the peak), as `pipeline check` says.
@Test func aPipelineWithTheLinearScheduleRunsANight() async throws {
    let pipeline = PipelineFixture.pipeline().replacingOccurrences(of: "\"learning_rate\": 0.01", with: "\"learning_rate\": 0.01, \"schedule\": \"linear\"")
    let fixture = try await PipelineFixture.make(pipeline: pipeline)
    try fixture.expectSuccess(await fixture.adapt(["pipeline", "check", fixture.pipelinePath]))
    let run = try #require(RunID.parse(try await fixture.enqueue()))
    try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
    let train = try #require(try fixture.queue().jobs(matching: .init(run: run)).first { $0.kind == "train" })
    #expect(train.state == .succeeded, "\(train.error ?? "")")
}

/// `events --follow --limit N` starts with the last N events recorded, as `tail -n N -f` does.
@Test func followingEventsWithALimitStartsFromTheLastEventsRecorded() async throws {
    let fixture = try await PipelineFixture.make()
    let run = try await fixture.enqueue()
    try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
    let all = try await fixture.adapt(["events", "--run", run, "--json"])
    try fixture.expectSuccess(all)
    let ids = try #require(try JSON.decode(JSONValue.self, from: all.stdout, context: "events").arrayValue).compactMap { $0["id"]?.intValue }
    #expect(ids.count > 3)
    let followed = try await fixture.adapt(["events", "--run", run, "--follow", "--limit", "3", "--json"])
    try fixture.expectSuccess(followed)
    let lines = followed.stdout.split(separator: "\n")
    let followedIDs = try lines.map { try JSON.decode(JSONValue.self, from: String($0), context: "event line")["id"]?.intValue }
    #expect(followedIDs == ids.suffix(3).map { $0 }, "\(followed.stdout)")
}
