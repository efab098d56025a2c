import AdaptCore
import Foundation
import TestSupport
import Testing
@testable import Training

/// Adapter files and checkpoints whose digest is intact but whose numbers are impossible (a shape whose
/// product overflows, a NaN weight, a cursor at epoch Int.max) are refused as corrupt, never a trap.
@Suite struct ImplausibleFileValuesTests {
    let configuration = TrainingConfiguration(steps: 12, batchSize: 2, learningRate: 0.05, seed: 3,
                                              adapter: AdapterSettings(rank: 8), checkpointEvery: 5)

    func adapter(alpha: Float = 6, _ change: (inout NamedTensors) -> Void = { _ in }) -> Data {
        let settings = TrainingConfiguration(steps: 30)
        let metadata = AdapterFileMetadata(baseModelDigest: baseDigest, chatConvention: "chatml", templateDigest: nil,
                                           targets: ["q", "v"], rank: 3, alpha: alpha, steps: 30, trainingExamples: 10,
                                           heldOutExamples: 2, truncatedExamples: 0, trainingTokens: 1440, metrics: [:],
                                           trainingConfiguration: settings.numericSettings,
                                           trainingConfigurationDigest: settings.digest)
        var tensors = BigramLoRA().initialParameters()
        change(&tensors)
        return AdapterFile(metadata: metadata, tensors: tensors).encoded().data
    }

    func expectMalformed(_ field: String, _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("accepted a file with an impossible \(field)")
        } catch let TrainingError.malformed(_, refused, _) {
            #expect(refused.contains(field), "refused \(refused), expected \(field)")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func refusesAnAdapterTensorWhoseShapeProductOverflows() {
        // Set through the property: the initializer would check the shape against the values.
        let data = adapter { $0.shapes[0] = [16_777_215, 16_777_215, 16_777_215, 16_777_215] }
        expectMalformed("tensor") { _ = try AdapterFile.decode(data, name: "a") }
    }

    @Test(arguments: [Float.nan, .infinity, -.infinity])
    func refusesAnAdapterHoldingANonFiniteValue(_ bad: Float) {
        let data = adapter { $0.values[1][0] = bad }
        expectMalformed("tensor") { _ = try AdapterFile.decode(data, name: "a") }
    }

    @Test(arguments: [Float(0), -2])
    func refusesAnAdapterWhoseAlphaIsNotPositive(_ bad: Float) {
        expectMalformed("alpha") { _ = try AdapterFile.decode(adapter(alpha: bad), name: "a") }
    }

    @Test func stillReadsAnOrdinaryAdapter() throws {
        _ = try AdapterFile.decode(adapter(), name: "a")
    }

    /// A checkpoint at step 12 of a real run, with `change` applied to its state before encoding.
    func checkpoint(_ change: (inout TrainingState) -> Void) throws -> Data {
        let trainer = try makeTrainer(configuration)
        var state = try trainer.run(from: trainer.freshState(), stopAfter: 12)
        change(&state)
        return try Checkpoint(configuration: configuration, baseModelDigest: baseDigest,
                              datasetDigest: trainer.datasetDigest, state: state).encoded()
    }

    @Test func refusesACheckpointTensorWhoseShapeProductOverflows() throws {
        let data = try checkpoint { $0.parameters.shapes[0] = [16_777_215, 16_777_215, 16_777_215, 16_777_215] }
        expectMalformed("lora_a") { _ = try Checkpoint.decode(data, name: "c") }
    }

    @Test func refusesACheckpointCursorAtAnImpossibleEpoch() throws {
        let data = try checkpoint { $0.cursor.epoch = Int.max }
        expectMalformed("cursor") { _ = try Checkpoint.decode(data, name: "c") }
    }

    @Test func refusesACheckpointCountingImpossiblyManyTokens() throws {
        let data = try checkpoint { $0.tokens = Int.max }
        expectMalformed("tokens") { _ = try Checkpoint.decode(data, name: "c") }
    }

    @Test func theStoreSkipsAnImplausibleNewestCheckpointAndResumesFromThePrevious() throws {
        let directory = TemporaryDirectory()
        let store = DirectoryCheckpointStore(directory: directory.url)
        let trainer = try makeTrainer(configuration, store: store)
        _ = try trainer.run(from: trainer.freshState(), stopAfter: 12)
        try checkpoint { $0.cursor.epoch = Int.max }.write(to: directory.file("step-00000012.ckpt"))
        let loaded = try #require(try store.loadNewest())
        #expect(loaded.reference.step == 10)
        #expect(loaded.warnings.count == 1 && loaded.warnings[0].contains("step-00000012.ckpt is corrupt"))
        // Training continues from step 10 and finishes.
        let (state, _) = try #require(try trainer.resumeState())
        #expect(try trainer.run(from: state).step == 12)
    }
}
