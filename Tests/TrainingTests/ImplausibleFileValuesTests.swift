import AdaptCore
import Adapters
import Foundation
import TestSupport
import Testing
@testable import Training

/// Checkpoints whose digest is intact but whose numbers are impossible (a shape whose product overflows, a
/// cursor at epoch Int.max) are refused as corrupt, never a trap (adapter files: AdaptersTests).
@Suite struct ImplausibleFileValuesTests {
    let configuration = TrainingConfiguration(steps: 12, batchSize: 2, learningRate: 0.05, seed: 3,
                                              adapter: AdapterSettings(rank: 8), checkpointEvery: 5)

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

    @Test func refusesACheckpointWhosePayloadIsADecompressionBombBeforeDecodingIt() {
        // 60 KB of zstd claiming 8 GiB, in a header whose lengths and digest all match.
        let compressed = ZstdBomb.frame(blocks: 15_000, declared: 1 << 33)
        var file = Data(Checkpoint.magic)
        for (value, width) in [(UInt64(Checkpoint.version), 4), (0, 4), (UInt64(compressed.count), 8), (1 << 33, 8)] {
            withUnsafeBytes(of: value.littleEndian) { file.append(contentsOf: $0.prefix(width)) }
        }
        file.append(Data(hexBytes: Digest.sha256(compressed).hex))
        file.append(compressed)
        expectMalformed("decompressed length") { _ = try Checkpoint.decode(file, name: "c") }
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
