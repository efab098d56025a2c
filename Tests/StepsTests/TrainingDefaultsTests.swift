import AdaptCore
import Adapters
import Foundation
import Model
import Pipelines
@testable import Steps
import Testing
import TestSupport
import Training

/// The nightly pipeline's train step and `adapt train` train with the same defaults (`TrainingDefaults`), and a
/// run planned under other defaults keeps the values it was planned with.
@Suite struct TrainingDefaultsTests {
    /// The configuration the train step of `pipeline`'s run would train with, its LoRA settings included.
    static func trainStepConfiguration(_ pipeline: Pipeline) throws -> TrainingConfiguration {
        let run = try plan(pipeline: pipeline, lineage: "mail", night: try Night(parsing: "2026-12-01"))
        let train = try #require(run.steps.first { $0.kind == "train" })
        let plan = try TrainingPlan(input: train.input)
        var configuration = plan.configuration
        configuration.adapter = plan.lora.settings
        return configuration
    }

    @Test func adaptTrainWithNoSettingsTrainsAsTheNightlyPipelineDoes() throws {
        let directory = TemporaryDirectory("adapt-defaults")
        let model = directory.file("tiny.gguf")
        try TinyModel(seed: 4).write(to: model)
        func lines(_ range: Range<Int>) -> Data {
            Data(range.map { i in
                JSON.canonicalString(JSONValue.object(["prompt": .string("question \(i)"),
                                                       "completion": .string("answer \(i), steady as she goes")]))
            }.joined(separator: "\n").utf8)
        }
        try lines(0..<12).write(to: directory.file("data.jsonl"))
        try lines(12..<16).write(to: directory.file("held.jsonl"))
        let out = directory.file("out.lora")
        // No training setting on the command line: every number below is adapt train's own default. The
        // held-out file turns on early stopping, whose defaults are shared too.
        let result = try Executables.run("adapt", ["train", "--data", directory.file("data.jsonl").path,
                                                   "--model", model.path, "--out", out.path,
                                                   "--held-out", directory.file("held.jsonl").path, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let recorded = try AdapterFile.read(from: out).adapter.metadata.trainingConfiguration

        var expected = try Self.trainStepConfiguration(.nightly)
        // What differs by design: a run's seed (derived per lineage and night in a pipeline, 0 in adapt train),
        // and the sequence length (the pipeline's 256 bounds a night's work; adapt train takes 512 from a file
        // of any shape). Thread counts are both every core this process may use (`blas_threads: auto`).
        #expect(expected.maxLength == 256 && expected.threads == StepThreads.available())
        expected.seed = 0
        expected.maxLength = 512
        // And the evaluation of the starting weights, which a night plans to keep its weights parent when no step
        // beats it, and adapt train does only when started from an adapter (--init-adapter).
        #expect(expected.earlyStopping?.evaluatesAtStart == true)
        expected.earlyStopping?.evaluatesAtStart = false
        #expect(recorded == expected.numericSettings)
        #expect(recorded["steps"] == .int(TrainingDefaults.steps))
    }

    @Test func theNightlyTrainStepReadsTheSharedDefaults() throws {
        let configuration = try Self.trainStepConfiguration(.nightly)
        #expect(configuration.steps == TrainingDefaults.steps)
        #expect(configuration.learningRate == TrainingDefaults.learningRate)
        #expect(configuration.batchSize == TrainingDefaults.batchSize)
        #expect(configuration.schedule == .cosine(warmup: TrainingDefaults.warmupSteps, floor: 0.1))
        #expect(configuration.adapter.dropout == Float(TrainingDefaults.dropout))
        #expect(configuration.adapter.rank == TrainingDefaults.rank)
        #expect(configuration.adapter.alpha == Float(TrainingDefaults.alpha))
        #expect(configuration.earlyStopping == Training.EarlyStopping(every: TrainingDefaults.earlyStoppingEvery,
                                                                      patience: TrainingDefaults.earlyStoppingPatience, evaluatesAtStart: true))
    }

    /// Replay runs a step with the input its run recorded, every parameter spelled out, so a run planned before
    /// the defaults changed (200 steps at 1e-3, no dropout, early stopping every 25 steps) trains as it did.
    @Test func aRunPlannedUnderTheEarlierDefaultsKeepsThem() throws {
        let earlier = #"""
            {"train": {"steps": 200, "rank": 8, "alpha": 16, "dropout": 0,
                       "targets": ["attn_q", "attn_k", "attn_v", "attn_output"], "learning_rate": 0.001,
                       "schedule": "cosine", "warmup_steps": 10, "batch_size": 4, "grad_accumulation": 1,
                       "max_length": 256, "checkpoint_interval": 10, "early_stopping": {"every_steps": 25, "patience": 3},
                       "blas_threads": 1}}
            """#
        let pipeline = try Pipeline.parse(Data(earlier.utf8), source: "earlier.json")
        let run = try plan(pipeline: pipeline, lineage: "mail", night: try Night(parsing: "2026-11-30"))
        let train = try #require(run.steps.first { $0.kind == "train" })
        let configuration = try TrainingPlan(input: train.input).configuration
        #expect(configuration.steps == 200 && configuration.learningRate == 1e-3 && configuration.batchSize == 4)
        // Planned now, with `init`: it measures its starting weights too.
        #expect(configuration.earlyStopping == Training.EarlyStopping(every: 25, patience: 3, evaluatesAtStart: true))
        #expect(try TrainingPlan(input: train.input).lora.dropout == 0)
        // The manifest holds the resolved definition: read back, it has the digest the run recorded, whatever
        // the built-in defaults are now.
        let definition = try #require(run.manifest["definition"])
        let again = try Pipeline.parse(JSON.canonical(definition), source: "manifest")
        #expect(run.manifest["pipeline_digest"] == .string(again.digest.hex))
        #expect(again.digest != Pipeline.nightly.digest)
    }
}

/// `pipeline check` accepts exactly the alphas an adapter file can record, so no checked pipeline fails at train.
@Test func aPipelinesLargestAlphaIsTheLargestAnAdapterRecords() {
    #expect(TrainParameters.maximumAlpha == Double(AdapterSettings.maximumAlpha))
}
