import AdaptCore
import Model
import Pipelines
import Testing
@testable import Steps

/// How the train and eval steps choose the base model's storage from their input (`StepBaseWeights`).
@Suite struct StepBaseWeightsTests {
    @Test func aPipelinesStoragesAreTheModelsStorages() {
        #expect(Set(BaseWeights.allCases.map(\.rawValue)) == Set(BaseWeightStorage.allCases.map(\.rawValue)))
    }

    @Test func theInputsStorageIsUsedAndAnInputWithoutOneKeepsTheF32BaseOfItsTime() throws {
        #expect(try StepBaseWeights.storage(input: .object(["base_weights": .string("quantized")]), step: "train", kind: "train") == .quantized)
        #expect(try StepBaseWeights.storage(input: .object(["base_weights": .string("f32")]), step: "eval", kind: "eval") == .f32)
        #expect(try StepBaseWeights.storage(input: .object(["blas_threads": .int(1)]), step: "train", kind: "train") == .f32)
        let planned = try plan(pipeline: .nightly, lineage: "mail", night: Night(parsing: "2026-11-30"), seed: 7)
        for step in planned.steps where ["train", "eval"].contains(step.kind) {
            #expect(try StepBaseWeights.storage(input: step.input, step: step.name, kind: step.kind) == .quantized)
        }
    }

    @Test func anUnknownStorageIsAnInvalidInputNamingTheChoices() {
        do {
            _ = try StepBaseWeights.storage(input: .object(["base_weights": .string("int8")]), step: "nightly-train", kind: "train")
            Issue.record("an unknown storage was accepted")
        } catch let error as StepError {
            #expect(!error.isRetryable)
            #expect(error.description.hasPrefix("the input of train step nightly-train is not valid, so nothing was changed: base_weights must be f32 or quantized"))
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func theRecordedArithmeticNamesTheStorage() {
        let here = BLASArithmetic.current(threads: 1)
        #expect(StepBaseWeights.recorded(here, storage: .quantized).baseWeights == "quantized")
        #expect(StepBaseWeights.recorded(here, storage: .f32).difference(from: here) == nil)
    }
}
