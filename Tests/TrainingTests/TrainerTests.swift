import AdaptCore
import Foundation
import Model
import TestSupport
import Testing
@testable import Training

/// A checkpoint store that keeps every checkpoint ever saved, so a test can resume from each of them.
final class RecordingStore: CheckpointStore {
    let saved = Locked<[(step: Int, data: Data)]>([])
    var location: String { "memory" }
    func list() throws -> [CheckpointReference] {
        saved.withLock { $0.map { CheckpointReference(step: $0.step, name: Checkpoint.fileName(step: $0.step)) }.reversed() }
    }
    func read(_ reference: CheckpointReference) throws -> Data {
        saved.withLock { $0.last { $0.step == reference.step }!.data }
    }
    func save(_ data: Data, step: Int) throws -> CheckpointReference {
        saved.withLock { $0.append((step, data)) }
        return CheckpointReference(step: step, name: Checkpoint.fileName(step: step))
    }
    /// A store holding only the checkpoint of `step`, as a resumed process would find it.
    func only(step: Int) -> RecordingStore {
        let store = RecordingStore()
        let data = saved.withLock { $0.last { $0.step == step }!.data }
        _ = try? store.save(data, step: step)
        return store
    }
}

let baseDigest = Digest.sha256("test base model")

func makeTrainer(_ configuration: TrainingConfiguration, model: BigramLoRA = BigramLoRA(dropout: 0.1),
                 store: (any CheckpointStore)? = nil, examples: Int = 10, heldOut: Int = 0) throws -> Trainer {
    let data = model.dataset(count: examples)
    let held = heldOut > 0 ? model.dataset(count: heldOut, seed: 12) : []
    return try Trainer(configuration: configuration, source: model, data: data, heldOut: held,
                       initial: model.initialParameters(), baseModelDigest: baseDigest, store: store,
                       clock: ManualClock())
}

@Suite struct TrainerTests {
    let configuration = TrainingConfiguration(steps: 30, batchSize: 3, gradientAccumulation: 2, learningRate: 0.05,
                                              schedule: .cosine(warmup: 3, floor: 0.1), seed: 5, checkpointEvery: 4)

    @Test func theTestModelsGradientMatchesFiniteDifferences() {
        let model = BigramLoRA(dropout: 0.2)
        var parameters = model.initialParameters()
        // Move B and D off zero so every gradient is non-trivial.
        for t in [1, 3] { parameters.values[t] = parameters.values[t].indices.map { Float($0 % 5) * 0.1 - 0.2 } }
        let batch = model.dataset(count: 3)
        let analytic = model.compute(batch, parameters: parameters, step: 4, gradients: true).gradients
        for t in 0..<4 {
            for i in stride(from: 0, to: parameters.values[t].count, by: 5) {
                let h: Float = 1e-2
                var plus = parameters, minus = parameters
                plus.values[t][i] += h
                minus.values[t][i] -= h
                let numeric = (model.compute(batch, parameters: plus, step: 4, gradients: false).loss
                    - model.compute(batch, parameters: minus, step: 4, gradients: false).loss)
                    / Double(plus.values[t][i] - minus.values[t][i])
                #expect(abs(numeric - analytic[t][i]) < 1e-3 * max(1, abs(analytic[t][i])), "\(parameters.names[t])[\(i)]")
            }
        }
    }

    @Test func theLossFalls() throws {
        let trainer = try makeTrainer(configuration)
        let state = try trainer.run(from: trainer.freshState())
        #expect(state.step == 30 && state.losses.count == 30)
        let first: Double = state.losses.prefix(5).reduce(0, +) / 5
        let last: Double = state.losses.suffix(5).reduce(0, +) / 5
        #expect(last < 0.5 * first)
        #expect(state.microStep == 60)
        #expect(state.cursor == DataOrder(count: 10, seed: 5).cursor(after: 30 * 6))
    }

    @Test func resumingFromEveryCheckpointIsBitIdenticalToTheUninterruptedRun() throws {
        let recorder = RecordingStore()
        let uninterrupted = try makeTrainer(configuration, store: recorder)
        let reference = try uninterrupted.run(from: uninterrupted.freshState())
        let steps = recorder.saved.withLock { $0.map(\.step) }
        #expect(steps == [4, 8, 12, 16, 20, 24, 28, 30])
        for step in steps {
            let store = recorder.only(step: step)
            let resumedTrainer = try makeTrainer(configuration, store: store)
            let (state, event) = try #require(try resumedTrainer.resumeState())
            #expect(event == .resumed(step: step, checkpoint: Checkpoint.fileName(step: step), warnings: []))
            let finished = try resumedTrainer.run(from: state)
            let identical = finished.bitwiseEqual(reference)
            #expect(identical, "resumed from step \(step)")
        }
    }

    @Test func resumeWithEarlyStoppingIsBitIdenticalToo() throws {
        var config = configuration
        config.earlyStopping = EarlyStopping(every: 2, patience: 50)
        let recorder = RecordingStore()
        let uninterrupted = try makeTrainer(config, store: recorder, heldOut: 4)
        let reference = try uninterrupted.run(from: uninterrupted.freshState())
        #expect(reference.evaluations.count == 15 && reference.best != nil)
        for step in recorder.saved.withLock({ $0.map(\.step) }) {
            let resumed = try makeTrainer(config, store: recorder.only(step: step), heldOut: 4)
            let finished = try resumed.run(from: try #require(try resumed.resumeState()).state)
            let identical = finished.bitwiseEqual(reference)
            #expect(identical, "resumed from step \(step)")
        }
    }

    @Test func stopsEarlyAndKeepsTheBestWeights() throws {
        // A learning rate far too high makes held-out loss climb after a few steps.
        var config = TrainingConfiguration(steps: 200, batchSize: 2, learningRate: 0.8, schedule: .constant,
                                           optimizer: AdamW(maxGradientNorm: nil), seed: 1, checkpointEvery: 1000)
        config.earlyStopping = EarlyStopping(every: 2, patience: 3)
        let trainer = try makeTrainer(config, examples: 4, heldOut: 6)
        var events: [TrainingEvent] = []
        let state = try trainer.run(from: trainer.freshState()) { events.append($0) }
        #expect(state.stoppedEarly)
        #expect(state.step < 200)
        let best = try #require(state.bestEvaluation)
        #expect(best.loss == state.evaluations.map(\.loss).min())
        #expect(state.evaluations.filter { $0.step > best.step }.count == 3)
        #expect(trainer.heldOutLoss(state.result) == best.loss)
        #expect(!state.result.bitwiseEqual(state.parameters))
        #expect(events.contains(.stoppedEarly(step: state.step, bestStep: best.step, bestLoss: best.loss)))
        #expect(!events.contains { if case .checkpointWritten = $0 { return true } else { return false } })  // no store
    }

    @Test func reportsEveryStepAndCheckpointAsValues() throws {
        let clock = ManualClock()
        let model = BigramLoRA()
        let directory = TemporaryDirectory()
        let store = DirectoryCheckpointStore(directory: directory.url)
        let trainer = try Trainer(configuration: configuration, source: model, data: model.dataset(count: 10),
                                  initial: model.initialParameters(), baseModelDigest: baseDigest, store: store, clock: clock)
        var events: [TrainingEvent] = []
        _ = try trainer.run(from: trainer.freshState()) { event in
            events.append(event)
            clock.advance(milliseconds: 500)   // each step "takes" half a second
        }
        let steps = events.compactMap { if case let .step(p) = $0 { return p } else { return nil } }
        #expect(steps.map(\.step) == Array(1...30))
        #expect(steps.allSatisfy { $0.totalSteps == 30 })
        let checkpoints = events.compactMap { if case let .checkpointWritten(step, _, _, _) = $0 { return step } else { return nil } }
        #expect(checkpoints == [4, 8, 12, 16, 20, 24, 28, 30])
        // Step 2 is reported after one event has advanced the clock: 2 steps · 6 sequences · 8 tokens in 0.5 s.
        #expect(steps[0].etaSeconds == nil && steps[0].tokensPerSecond == 0)
        #expect(steps[1].tokensPerSecond == 192 && steps[1].elapsedSeconds == 0.5)
        #expect(steps[1].etaSeconds == 0.25 * 28)
        #expect(steps.last!.smoothedLoss == StepProgress.smoothed(Array(steps.map(\.loss))))
    }

    @Test func accumulatingMicroBatchesMatchesOneLargeBatch() throws {
        // Same sequences per optimizer step either way; only the float rounding of the sums differs.
        let model = BigramLoRA()
        var large = configuration
        (large.batchSize, large.gradientAccumulation, large.steps) = (4, 1, 10)
        var accumulated = large
        (accumulated.batchSize, accumulated.gradientAccumulation) = (2, 2)
        let a = try makeTrainer(large, model: model)
        let b = try makeTrainer(accumulated, model: model)
        let x = try a.run(from: a.freshState()), y = try b.run(from: b.freshState())
        for (p, q) in zip(x.losses, y.losses) { #expect(abs(p - q) < 1e-5 * max(1, abs(p))) }
        #expect(x.cursor == y.cursor && x.tokens == y.tokens)
        #expect(y.microStep == 2 * x.microStep)
    }

    @Test func stopsBeforeTheNextStepWhenTheCallerSaysSo() throws {
        let recorder = RecordingStore()
        let trainer = try makeTrainer(configuration, store: recorder)
        var asked = 0
        let state = try trainer.run(from: trainer.freshState(), shouldContinue: { asked += 1; return asked <= 6 })
        #expect(state.step == 6)
        #expect(recorder.saved.withLock { $0.map(\.step) } == [4])
    }

    @Test func stopsWithATypedErrorWhenTheLossIsNoLongerFinite() throws {
        var config = configuration
        (config.learningRate, config.schedule, config.optimizer.maxGradientNorm) = (1e30, .constant, nil)
        let recorder = RecordingStore()
        let trainer = try makeTrainer(config, store: recorder)
        let error = thrown { try trainer.run(from: trainer.freshState()) }
        guard case let .diverged(step, _, rate)? = error else { Issue.record("expected divergence, got \(String(describing: error))"); return }
        #expect(step > 1 && rate == 1e30)
        #expect(recorder.saved.withLock { $0.allSatisfy { $0.step < step } })
    }

    @Test func refusesADatasetWithoutTargets() throws {
        let model = BigramLoRA()
        let empty = TrainingSequence(tokens: [1, 2], weights: [0])
        #expect(throws: TrainingError.self) {
            try Trainer(configuration: TrainingConfiguration(), source: model, data: [empty],
                        initial: model.initialParameters(), baseModelDigest: baseDigest)
        }
    }
}
