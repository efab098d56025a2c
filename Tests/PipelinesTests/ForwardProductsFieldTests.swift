import AdaptCore
import Foundation
import Pipelines
import Testing

@Test func forwardProductsTakesInt8OrSgemmAndDefaultsToInt8() throws {
    #expect(problems(#"{"train": {"forward_products": "sgemm"}}"#) == [])
    #expect(problems(#"{"train": {"forward_products": "int8"}}"#) == [])
    #expect(problems(#"{"train": {"forward_products": "int4"}}"#).count == 1)
    #expect(Pipeline.nightly.train.forwardProducts == .int8)
    let parsed = try Pipeline.parse(Data(#"{"train": {"forward_products": "sgemm"}}"#.utf8), source: "test.json")
    #expect(parsed.train.forwardProducts == .sgemm && parsed.digest != Pipeline.nightly.digest)
}

@Test func trainAndEvalInputsCarryTheForwardProductsAndOnlyTheirs() throws {
    for (text, expected) in [("{}", "int8"), (#"{"train": {"forward_products": "sgemm"}}"#, "sgemm")] {
        let pipeline = try Pipeline.parse(Data(text.utf8), source: "test.json")
        let run = try plan(pipeline: pipeline, lineage: "mail", night: Night(parsing: "2026-11-30"), seed: 7)
        for step in run.steps {
            #expect(step.input["forward_products"] == (["train", "eval"].contains(step.kind) ? .string(expected) : nil), "\(step.kind)")
            #expect(StepInputCheck.problems(step.input, kind: StepKind(rawValue: step.kind)!).isEmpty, "\(step.kind)")
        }
    }
}

@Test func aStepInputPlannedBeforeTheForwardProductsReadsAsTheSgemmItRanWith() throws {
    let run = try plan(pipeline: .nightly, lineage: "mail", night: Night(parsing: "2026-11-30"), seed: 7)
    for kind in ["train", "eval"] {
        var old = try #require(run.steps.first { $0.kind == kind }?.input.objectValue)
        old["forward_products"] = nil
        #expect(StepInputCheck.problems(.object(old), kind: StepKind(rawValue: kind)!).isEmpty, "\(kind)")
        if kind == "train" {
            #expect(try PlannedInput.parameters(TrainParameters.self, from: .object(old)).forwardProducts == .sgemm)
        }
    }
}
