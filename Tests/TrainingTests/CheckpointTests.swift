import AdaptCore
import Adapters
import Foundation
import Model
import TestSupport
import Testing
@testable import Training

@Suite struct CheckpointTests {
    let configuration = TrainingConfiguration(steps: 12, batchSize: 2, learningRate: 0.05, seed: 3,
                                              adapter: AdapterSettings(rank: 8), checkpointEvery: 5)

    /// A store with checkpoints at steps 5 and 10 (and the last two kept: 10 and 12 after a full run).
    func trainedStore(_ directory: TemporaryDirectory, steps: Int = 10) throws -> (DirectoryCheckpointStore, TrainingState) {
        let store = DirectoryCheckpointStore(directory: directory.url)
        let trainer = try makeTrainer(configuration, store: store)
        let state = try trainer.run(from: trainer.freshState(), stopAfter: steps)
        return (store, state)
    }

    @Test func roundTripsEveryFieldBitForBit() throws {
        var config = configuration
        config.earlyStopping = EarlyStopping(every: 3, patience: 2)
        let trainer = try makeTrainer(config, heldOut: 3)
        let state = try trainer.run(from: trainer.freshState(), stopAfter: 7)
        let checkpoint = Checkpoint(configuration: config, baseModelDigest: baseDigest, datasetDigest: trainer.datasetDigest, state: state)
        let decoded = try Checkpoint.decode(try checkpoint.encoded(), name: "c")
        #expect(decoded.state.bitwiseEqual(state))
        #expect(decoded.configuration == config && decoded.baseModelDigest == baseDigest)
        #expect(decoded.state.best != nil && decoded.state.evaluations.count == 2)
    }

    @Test func keepsTheLastTwoInTheDirectory() throws {
        let directory = TemporaryDirectory()
        let (store, _) = try trainedStore(directory, steps: 12)
        #expect(try store.list().map(\.step) == [12, 10])
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(names == ["step-00000010.ckpt", "step-00000012.ckpt"])
    }

    @Test func detectsAFlippedByteAndFallsBackToThePreviousCheckpoint() throws {
        let directory = TemporaryDirectory()
        let (store, _) = try trainedStore(directory, steps: 12)
        let newest = directory.file("step-00000012.ckpt")
        var bytes = try Data(contentsOf: newest)
        bytes[bytes.count / 2] ^= 0x10
        try bytes.write(to: newest)
        #expect(throws: TrainingError.self) { try Checkpoint.decode(bytes, name: "x") }
        if case .digestMismatch = try #require(thrown { try Checkpoint.decode(bytes, name: "x") }) {} else { Issue.record("expected a digest mismatch") }
        let loaded = try #require(try store.loadNewest())
        #expect(loaded.reference.step == 10)
        #expect(loaded.warnings.count == 1 && loaded.warnings[0].contains("step-00000012.ckpt is corrupt"))
        // And the trainer continues from there, reporting the warning.
        let trainer = try makeTrainer(configuration, store: store)
        let (_, event) = try #require(try trainer.resumeState())
        guard case let .resumed(step, _, warnings) = event else { Issue.record("expected resumed"); return }
        #expect(step == 10 && warnings.count == 1)
    }

    @Test func detectsATruncatedCheckpoint() throws {
        let directory = TemporaryDirectory()
        let (store, _) = try trainedStore(directory, steps: 12)
        let newest = directory.file("step-00000012.ckpt")
        let bytes = try Data(contentsOf: newest)
        try bytes.prefix(bytes.count - 100).write(to: newest)
        let error = try #require(thrown { try Checkpoint.decode(bytes.prefix(bytes.count - 100), name: "step-00000012.ckpt") })
        #expect(error == .truncated(file: "step-00000012.ckpt", expected: bytes.count, actual: bytes.count - 100))
        #expect(try store.loadNewest()?.reference.step == 10)
        // Cut inside the header, too.
        #expect(throws: TrainingError.truncated(file: "h", expected: 64, actual: 20)) { try Checkpoint.decode(bytes.prefix(20), name: "h") }
    }

    @Test func failsWithAMessageWhenEveryCheckpointIsCorrupt() throws {
        let directory = TemporaryDirectory()
        let (store, _) = try trainedStore(directory, steps: 12)
        for name in ["step-00000010.ckpt", "step-00000012.ckpt"] {
            try Data("not a checkpoint at all, but long enough to have a header of sixty-four bytes....".utf8).write(to: directory.file(name))
        }
        let error = try #require(thrown { try store.loadNewest() })
        guard case let .noUsableCheckpoint(_, failures) = error else { Issue.record("\(error)"); return }
        #expect(failures.count == 2 && failures.allSatisfy { $0.contains("wrong magic") })
    }

    @Test func refusesACheckpointFromAnotherRankNamingTheFieldAndTheWayOut() throws {
        let directory = TemporaryDirectory()
        let (store, _) = try trainedStore(directory)
        var other = configuration
        other.adapter.rank = 16
        let trainer = try makeTrainer(other, store: store)
        let error = try #require(thrown { try trainer.resumeState() })
        #expect("\(error)" == "checkpoint step-00000010.ckpt was written for rank 8, this run uses rank 16; pass --rank 8 or start fresh")
    }

    @Test func refusesACheckpointFromAnotherBaseModelOrDataset() throws {
        let directory = TemporaryDirectory()
        let (store, _) = try trainedStore(directory)
        let model = BigramLoRA(dropout: 0.1)
        let otherBase = try Trainer(configuration: configuration, source: model, data: model.dataset(count: 10),
                                    initial: model.initialParameters(), baseModelDigest: Digest.sha256("other"), store: store)
        #expect("\(try #require(thrown { try otherBase.resumeState() }))".contains("was written for base model"))
        let otherData = try Trainer(configuration: configuration, source: model, data: model.dataset(count: 9),
                                    initial: model.initialParameters(), baseModelDigest: baseDigest, store: store)
        #expect("\(try #require(thrown { try otherData.resumeState() }))".contains("pass the same --data or start fresh"))
    }

    @Test func recordsTheBaseWeightStorageAndResumesOnlyUnderIt() throws {
        let directory = TemporaryDirectory()
        let store = DirectoryCheckpointStore(directory: directory.url)
        let model = BigramLoRA(dropout: 0.1)
        func trainer(_ storage: BaseWeightStorage?) throws -> Trainer {
            try Trainer(configuration: configuration, source: model, data: model.dataset(count: 10),
                        initial: model.initialParameters(), baseModelDigest: baseDigest, store: store, baseWeights: storage)
        }
        let quantized = try trainer(.quantized)
        _ = try quantized.run(from: quantized.freshState(), stopAfter: 5)
        let saved = try #require(try store.loadNewest())
        #expect(saved.checkpoint.arithmetic?.baseWeights == "quantized" && saved.checkpoint.baseWeights == .quantized)
        #expect(try quantized.resumeState()?.state.step == 5)
        let error = try #require(thrown { try trainer(.f32).resumeState() })
        #expect("\(error)" == "checkpoint step-00000005.ckpt was written for base weights quantized, this run uses base weights f32; "
                + "pass --base-weights quantized to resume it, or start fresh")
        // A source without a base model checks nothing.
        #expect(try trainer(nil).resumeState()?.state.step == 5)
    }

    @Test func aCheckpointRecordingNoStorageWasComputedWithTheF32Base() throws {
        let directory = TemporaryDirectory()
        let (store, _) = try trainedStore(directory)
        let saved = try #require(try store.loadNewest())
        #expect(saved.checkpoint.arithmetic?.baseWeights == nil && saved.checkpoint.baseWeights == .f32)
        var old = saved.checkpoint
        old.arithmetic = nil
        #expect(try Checkpoint.decode(try old.encoded(), name: "old").baseWeights == .f32)
        let error = try #require(thrown {
            try saved.checkpoint.check(configuration: configuration, baseModelDigest: baseDigest, datasetDigest: saved.checkpoint.datasetDigest,
                                       layout: saved.checkpoint.state.parameters, datasetCount: 10, name: "old", baseWeights: .quantized)
        })
        #expect("\(error)".contains("was written for base weights f32, this run uses base weights quantized"))
    }

    @Test func theConfigurationDigestIgnoresOnlyTheCheckpointInterval() {
        var a = configuration, b = configuration
        b.checkpointEvery = 99
        #expect(a.digest == b.digest)
        (a.seed, b.seed) = (UInt64.max, UInt64.max - 1)
        #expect(a.digest != b.digest)
        b.seed = UInt64.max
        b.learningRate = a.learningRate.nextUp
        #expect(a.digest != b.digest)
    }

    @Test func acceptsADifferentCheckpointInterval() throws {
        let directory = TemporaryDirectory()
        let (store, _) = try trainedStore(directory)
        var other = configuration
        other.checkpointEvery = 3
        #expect(try makeTrainer(other, store: store).resumeState()?.state.step == 10)
    }

    @Test func refusesANewerFormatVersionAndAnotherFormat() throws {
        let directory = TemporaryDirectory()
        _ = try trainedStore(directory)
        var bytes = try Data(contentsOf: directory.file("step-00000010.ckpt"))
        bytes[8] = 9
        #expect(throws: TrainingError.unsupportedVersion(file: "c", version: 9, supported: 1)) { try Checkpoint.decode(bytes, name: "c") }
        bytes[0] = UInt8(ascii: "X")
        #expect(throws: TrainingError.notThisFormat(file: "c", expected: "an adapt training checkpoint")) { try Checkpoint.decode(bytes, name: "c") }
    }

    @Test func blobStoreKeepsTwoBehindAPointerAndFallsBackPastACorruptBlob() throws {
        let directory = TemporaryDirectory()
        let blobs = BlobStore(root: directory.file("blobs"))
        let pointer = FileCheckpointPointer(url: directory.file("pointer.json"))
        let store = BlobCheckpointStore(blobs: blobs, pointer: pointer)
        let trainer = try makeTrainer(configuration, store: store)
        let reference = try trainer.run(from: trainer.freshState())
        let entries = try pointer.read()
        #expect(entries.map(\.step) == [12, 10])
        #expect(blobs.all().count == 2)   // step 5's blob was removed once the pointer moved past it
        // Resuming from the newest reproduces the finished state; corrupting it falls back to step 10.
        #expect(try #require(try trainer.resumeState()).state.bitwiseEqual(reference))
        let newest = blobs.url(for: entries[0].digest)
        var bytes = try Data(contentsOf: newest)
        bytes[100] ^= 1
        try bytes.write(to: newest)
        let (state, event) = try #require(try trainer.resumeState())
        #expect(state.step == 10)
        guard case let .resumed(_, _, warnings) = event else { Issue.record("expected resumed"); return }
        #expect(warnings.count == 1 && warnings[0].contains("is corrupt"))
        let finished = try trainer.run(from: state)
        #expect(finished.bitwiseEqual(reference))
    }
}

/// The error `body` throws, or nil.
func thrown<T>(_ body: () throws -> T) -> TrainingError? {
    do { _ = try body(); return nil } catch let error as TrainingError { return error } catch { return .io("\(error)") }
}
