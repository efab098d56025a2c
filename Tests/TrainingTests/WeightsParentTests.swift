import AdaptCore
import Adapters
import Foundation
import Model
import TestSupport
import Testing
@testable import Training

/// A run that starts from an adapter's weights (its weights parent) instead of a fresh initialisation.
@Suite struct WeightsParentTests {
    static let examples = [
        TrainingExample(prompt: "say hello", completion: "hello world"),
        TrainingExample(prompt: "what is it", completion: "it is the end", weight: 2),
        TrainingExample(prompt: "and then", completion: "then the rest of the story"),
    ]

    /// A tiny model, and an adapter trained on it for 3 steps at rank 2 (B is no longer zero).
    static func parent(_ directory: TemporaryDirectory, rank: Int = 2) throws -> (model: URL, parent: WeightsParent) {
        let url = directory.file("tiny.gguf")
        try TinyModel(seed: 5).write(to: url)
        let run = try LoRATrainingRun(modelURL: url, examples: examples, lora: LoRAConfig(rank: rank),
                                      configuration: TrainingConfiguration(steps: 3, learningRate: 1e-2, seed: 1))
        let trainer = try run.trainer(store: nil)
        let (data, _) = run.adapter(from: try trainer.run(from: trainer.freshState())).encoded()
        return (url, try WeightsParent(data: data, name: "parent"))
    }

    @Test func theStepZeroWeightsAreTheParentsTensorsBitForBit() throws {
        let directory = TemporaryDirectory()
        let (model, parent) = try Self.parent(directory)
        // Another seed: a fresh initialisation would differ from the parent in every A.
        let run = try LoRATrainingRun(modelURL: model, examples: Self.examples, lora: LoRAConfig(rank: 2),
                                      configuration: TrainingConfiguration(steps: 2, learningRate: 1e-2, seed: 7))
        let trainer = try run.trainer(store: nil, startingFrom: parent)
        #expect(trainer.freshState().parameters.bitwiseEqual(parent.adapter.tensors))
        #expect(trainer.weightsParent == parent.digest)
        #expect(!(try run.trainer(store: nil)).freshState().parameters.bitwiseEqual(parent.adapter.tensors))

        // An adapter written elsewhere may list its tensors in another order: they are matched by name.
        var shuffled = parent.adapter
        let order = Array(shuffled.tensors.names.indices.reversed())
        shuffled.tensors = NamedTensors(names: order.map { parent.adapter.tensors.names[$0] },
                                        shapes: order.map { parent.adapter.tensors.shapes[$0] },
                                        values: order.map { parent.adapter.tensors.values[$0] })
        let reordered = try run.trainer(store: nil, startingFrom: WeightsParent(adapter: shuffled, digest: parent.digest))
        #expect(reordered.freshState().parameters.bitwiseEqual(parent.adapter.tensors))
    }

    @Test func aWarmRunDecaysTowardItsParentsWeightsNotTowardZero() throws {
        let directory = TemporaryDirectory()
        let (model, parent) = try Self.parent(directory)
        // A rate of zero leaves only the decay factor 1 − lr·λ = 1: so take a large λ at a small rate, where the
        // gradient steps (about lr each) are far smaller than what decay toward zero would take away.
        func finalWeights(towardParent: Bool) throws -> NamedTensors {
            var configuration = TrainingConfiguration(steps: 4, learningRate: 1e-4, schedule: .constant, seed: 7)
            configuration.optimizer.weightDecay = 2000
            configuration.optimizer.decaysTowardWeightsParent = towardParent
            let run = try LoRATrainingRun(modelURL: model, examples: Self.examples, lora: LoRAConfig(rank: 2), configuration: configuration)
            let trainer = try run.trainer(store: nil, startingFrom: parent)
            return try trainer.run(from: trainer.freshState()).parameters
        }
        func distance(_ a: NamedTensors, _ b: NamedTensors) -> Double {
            zip(a.values, b.values).reduce(0) { sum, pair in
                sum + zip(pair.0, pair.1).reduce(0) { $0 + Double(($1.0 - $1.1) * ($1.0 - $1.1)) }
            }.squareRoot()
        }
        let start = parent.adapter.tensors
        let size = distance(start, .zeros(like: start))
        let anchored = try finalWeights(towardParent: true)
        let shrunk = try finalWeights(towardParent: false)
        #expect(distance(anchored, start) < 0.01 * size)
        #expect(distance(shrunk, .zeros(like: start)) < 0.5 * size)
    }

    @Test func aParentOfAnotherRankOrAlphaOrModelIsRefusedNamingTheField() throws {
        let directory = TemporaryDirectory()
        let (model, parent) = try Self.parent(directory)
        let wider = try LoRATrainingRun(modelURL: model, examples: Self.examples, lora: LoRAConfig(rank: 4),
                                        configuration: TrainingConfiguration(steps: 2))
        #expect(wider.mismatch(with: parent) == WeightsParentMismatch(field: "rank", parent: "2", run: "4"))
        #expect(throws: WeightsParentMismatch(field: "rank", parent: "2", run: "4")) { try wider.trainer(store: nil, startingFrom: parent) }
        let louder = try LoRATrainingRun(modelURL: model, examples: Self.examples, lora: LoRAConfig(rank: 2, alpha: 32),
                                         configuration: TrainingConfiguration(steps: 2))
        #expect(louder.mismatch(with: parent)?.field == "alpha")
        let fewer = try LoRATrainingRun(modelURL: model, examples: Self.examples, lora: LoRAConfig(rank: 2, targets: [.q, .v]),
                                        configuration: TrainingConfiguration(steps: 2))
        #expect(fewer.mismatch(with: parent)?.field == "targets")
        let otherURL = directory.file("other.gguf")
        try TinyModel(seed: 6).write(to: otherURL)
        let other = try LoRATrainingRun(modelURL: otherURL, examples: Self.examples, lora: LoRAConfig(rank: 2),
                                        configuration: TrainingConfiguration(steps: 2))
        let mismatch = try #require(other.mismatch(with: parent))
        #expect(mismatch.field == "base model")
        #expect(mismatch.description.contains("was trained with base model") && mismatch.description.contains("--init-adapter"))
        let same = try LoRATrainingRun(modelURL: model, examples: Self.examples, lora: LoRAConfig(rank: 2),
                                       configuration: TrainingConfiguration(steps: 2))
        #expect(same.mismatch(with: parent) == nil)
    }

    @Test func aResumeWhoseCheckpointNamesAnotherWeightsParentIsRefusedWithTheWayOut() throws {
        let directory = TemporaryDirectory()
        let (model, parent) = try Self.parent(directory)
        let run = try LoRATrainingRun(modelURL: model, examples: Self.examples, lora: LoRAConfig(rank: 2),
                                      configuration: TrainingConfiguration(steps: 4, learningRate: 1e-2, seed: 7, checkpointEvery: 2))
        let store = RecordingStore()
        let warm = try run.trainer(store: store, startingFrom: parent)
        _ = try warm.run(from: warm.freshState(), stopAfter: 2)
        // The same parent resumes.
        #expect(try run.trainer(store: store, startingFrom: parent).resumeState()?.state.step == 2)
        // From zero, or from another adapter: refused, saying which parent the checkpoint needs.
        do {
            _ = try run.trainer(store: store).resumeState()
            Issue.record("a resume from zero was accepted")
        } catch let TrainingError.checkpointMismatch(_, field, stored, current, remedy) {
            #expect(field == "weights parent" && stored == parent.digest.short && current == "none (from zero)")
            #expect(remedy.contains(parent.digest.short) && remedy.contains("--init-adapter"))
        }
        let other = WeightsParent(adapter: parent.adapter, digest: Digest.sha256("another adapter file"))
        #expect(throws: TrainingError.self) { try run.trainer(store: store, startingFrom: other).resumeState() }
        // A checkpoint of a run from zero records no parent: a warm resume of it is refused too.
        let coldStore = RecordingStore()
        let cold = try run.trainer(store: coldStore)
        _ = try cold.run(from: cold.freshState(), stopAfter: 2)
        do {
            _ = try run.trainer(store: coldStore, startingFrom: parent).resumeState()
            Issue.record("a warm resume of a run from zero was accepted")
        } catch let TrainingError.checkpointMismatch(_, field, _, _, remedy) {
            #expect(field == "weights parent" && remedy.contains("without --init-adapter"))
        }
    }
}

/// `adapt train --init-adapter` as a real process.
@Suite(.serialized) struct InitAdapterCommandTests {
    @Test func trainStartsFromAnAdapterAndRefusesAnIncompatibleOneOrAResumeFromAnother() throws {
        let (directory, model, data) = try TrainCommandTests.fixture()
        func arguments(out: String) -> [String] {
            var list = TrainCommandTests.arguments(model: model, data: data, out: out)
            list[list.firstIndex(of: "30")!] = "4"
            return list
        }
        let parentPath = directory.file("parent.lora").path
        #expect(try Executables.run("adapt", arguments(out: parentPath)).status == 0)

        let childPath = directory.file("child.lora").path
        let child = try Executables.run("adapt", arguments(out: childPath) + ["--init-adapter", parentPath])
        #expect(child.status == 0, "\(child.stderr)")
        // Trained on from the parent: the first loss is the parent's fit, lower than a fresh start's.
        let fresh = try Executables.run("adapt", arguments(out: directory.file("fresh.lora").path))
        let warmLosses = try JSON.decode(TrainCommandTests.Result.self, from: child.stdout, context: "train").losses
        let freshLosses = try JSON.decode(TrainCommandTests.Result.self, from: fresh.stdout, context: "train").losses
        #expect(warmLosses[0] < freshLosses[0])

        // Another rank: refused before training, naming the field.
        var wider = arguments(out: directory.file("wider.lora").path) + ["--init-adapter", parentPath]
        wider[wider.firstIndex(of: "--rank")! + 1] = "8"
        let refused = try Executables.run("adapt", wider)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("trained with rank 4, this run uses 8"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.file("wider.lora").path))

        // The child's checkpoints name the parent: resuming them from zero is refused with the way out.
        let resumed = try Executables.run("adapt", arguments(out: childPath) + ["--resume"])
        #expect(resumed.status == 1)
        #expect(resumed.stderr.contains("weights parent") && resumed.stderr.contains("--init-adapter"), "\(resumed.stderr)")
        let again = try Executables.run("adapt", arguments(out: childPath) + ["--resume", "--init-adapter", parentPath])
        #expect(again.status == 0, "\(again.stderr)")
    }
}
