import AdaptCore
import Foundation
import Pipelines
import Testing

@Test func baseWeightsTakesQuantizedOrF32AndSuggestsANearMiss() throws {
    #expect(problems(#"{"train": {"base_weights": "f32"}}"#) == [])
    #expect(problems(#"{"train": {"base_weights": "quantized"}}"#) == [])
    #expect(problems(#"{"train": {"base_weights": "quantised"}}"#)
            == [#"train.base_weights must be one of quantized, f32, got "quantised"; did you mean quantized?"#])
    #expect(problems(#"{"train": {"base_weights": null}}"#).count == 1)
    #expect(Pipeline.nightly.train.baseWeights == .quantized)
    let parsed = try Pipeline.parse(Data(#"{"train": {"base_weights": "f32"}}"#.utf8), source: "test.json")
    #expect(parsed.train.baseWeights == .f32 && parsed.digest != Pipeline.nightly.digest)
}

@Test func trainAndEvalInputsCarryTheStorageAndOnlyTheirs() throws {
    for (text, expected) in [("{}", "quantized"), (#"{"train": {"base_weights": "f32"}}"#, "f32")] {
        let pipeline = try Pipeline.parse(Data(text.utf8), source: "test.json")
        #expect(pipeline.definition["train"]?["base_weights"] == .string(expected))
        let run = try plan(pipeline: pipeline, lineage: "mail", night: Night(parsing: "2026-11-30"), seed: 7)
        for step in run.steps {
            #expect(step.input["base_weights"] == (["train", "eval"].contains(step.kind) ? .string(expected) : nil), "\(step.kind)")
            #expect(StepInputCheck.problems(step.input, kind: StepKind(rawValue: step.kind)!).isEmpty, "\(step.kind)")
        }
        let train = try #require(run.steps.first { $0.kind == "train" })
        #expect(try PlannedInput.parameters(TrainParameters.self, from: train.input).baseWeights.rawValue == expected)
    }
}

@Test func aStepInputPlannedBeforeTheFieldReadsAsTheF32BaseItRanWith() throws {
    let run = try plan(pipeline: .nightly, lineage: "mail", night: Night(parsing: "2026-11-30"), seed: 7)
    for kind in ["train", "eval"] {
        var old = try #require(run.steps.first { $0.kind == kind }?.input.objectValue)
        old["base_weights"] = nil
        // Still a valid input: runs enqueued by an earlier build are claimed and replayed as they were planned.
        #expect(StepInputCheck.problems(.object(old), kind: StepKind(rawValue: kind)!).isEmpty, "\(kind)")
        if kind == "train" {
            #expect(try PlannedInput.parameters(TrainParameters.self, from: .object(old)).baseWeights == .f32)
        }
        old["base_weights"] = .string("int8")
        #expect(StepInputCheck.problems(.object(old), kind: StepKind(rawValue: kind)!).map(\.message)
                == [#"base_weights must be one of quantized, f32, got "int8""#], "\(kind)")
    }
}
