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
        #expect(StepBaseWeights.recorded(here, storage: .quantized, input: .object([:])).baseWeights == "quantized")
        #expect(StepBaseWeights.recorded(here, storage: .f32, input: .object([:])).difference(from: here) == nil)
    }

    @Test func aPipelinesForwardProductsAreTheModels() {
        #expect(Set(ForwardProductsChoice.allCases.map(\.rawValue)) == Set(ForwardProducts.allCases.map(\.rawValue)))
    }

    @Test func theInputsForwardProductsAreUsedAndAnInputWithoutThemKeepsTheSgemmOfItsTime() throws {
        #expect(try StepBaseWeights.forward(input: .object(["forward_products": .string("int8")]), step: "train", kind: "train") == .int8)
        #expect(try StepBaseWeights.forward(input: .object(["forward_products": .string("sgemm")]), step: "eval", kind: "eval") == .sgemm)
        #expect(try StepBaseWeights.forward(input: .object(["base_weights": .string("quantized")]), step: "train", kind: "train") == .sgemm)
        #expect(throws: StepError.self) {
            try StepBaseWeights.forward(input: .object(["forward_products": .string("fp8")]), step: "train", kind: "train")
        }
        let planned = try plan(pipeline: .nightly, lineage: "mail", night: Night(parsing: "2026-11-30"), seed: 7)
        for step in planned.steps where ["train", "eval"].contains(step.kind) {
            #expect(try StepBaseWeights.forward(input: step.input, step: step.name, kind: step.kind) == .int8)
        }
    }

    /// An input that chose int8 records the kernels this machine runs for it; one without the field records
    /// nothing new, so the arithmetic of a run planned before it is written (and compared) as it was.
    @Test func theRecordedArithmeticNamesTheForwardKernelsOnlyWhenTheInputChoseThem() {
        let here = BLASArithmetic.current(threads: 1)
        let old = StepBaseWeights.recorded(here, storage: .quantized, input: .object(["base_weights": .string("quantized")]))
        #expect(old.forwardKernels == nil)
        let int8 = StepBaseWeights.recorded(here, storage: .quantized, input: .object(["forward_products": .string("int8")]))
        #expect(int8.forwardKernels == ForwardProducts.int8.kernelName(storage: .quantized))
        let sgemm = StepBaseWeights.recorded(here, storage: .quantized, input: .object(["forward_products": .string("sgemm")]))
        #expect(sgemm.forwardKernels == "sgemm" && sgemm.difference(from: old) == nil)
        let f32 = StepBaseWeights.recorded(here, storage: .f32, input: .object(["forward_products": .string("int8")]))
        #expect(f32.forwardKernels == "sgemm")
        if int8.forwardKernels != "sgemm" {
            #expect(int8.differingFields(from: old) == ["forward_kernels"])
            #expect(int8.difference(from: old) == "forward products sgemm here, int8-v1 recorded")
        }
    }
}
