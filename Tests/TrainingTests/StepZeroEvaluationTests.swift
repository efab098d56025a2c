import AdaptCore
import Foundation
import Model
import TestSupport
import Testing
@testable import Training

/// Early stopping that measures the starting weights before the first step: a run in which no step beats them
/// hands them back unchanged ("no change" is a possible night).
@Suite struct StepZeroEvaluationTests {
    /// A configuration under which no evaluation after step 0 counts as an improvement.
    static func configuration(evaluatesAtStart: Bool) -> TrainingConfiguration {
        TrainingConfiguration(steps: 12, batchSize: 3, learningRate: 0.05, schedule: .constant, seed: 5,
                              earlyStopping: EarlyStopping(every: 2, patience: 2, minDelta: 1e9, evaluatesAtStart: evaluatesAtStart),
                              checkpointEvery: 2)
    }

    @Test func aRunThatNeverBeatsItsStartingWeightsHandsThemBackAndSaysSo() throws {
        let store = RecordingStore()
        let trainer = try makeTrainer(Self.configuration(evaluatesAtStart: true), store: store, heldOut: 4)
        let state = try trainer.run(from: trainer.freshState())
        #expect(state.evaluations.map(\.step) == [0, 2, 4])
        #expect(state.stoppedEarly && state.step == 4)
        #expect(state.keptStartingWeights)
        #expect(state.result.bitwiseEqual(trainer.initial))
        #expect(!state.parameters.bitwiseEqual(trainer.initial))
        // Its checkpoints (with the step-0 evaluation) load and resume to the same state.
        let resumed = try makeTrainer(Self.configuration(evaluatesAtStart: true), store: store.only(step: 2), heldOut: 4)
        let (from, _) = try #require(try resumed.resumeState())
        #expect(from.evaluations.map(\.step) == [0, 2])
        #expect(try resumed.run(from: from).bitwiseEqual(state))
    }

    @Test func withoutTheStepZeroEvaluationTheFirstEvaluatedStepIsTheBest() throws {
        let trainer = try makeTrainer(Self.configuration(evaluatesAtStart: false), heldOut: 4)
        let state = try trainer.run(from: trainer.freshState())
        #expect(state.evaluations.map(\.step) == [2, 4, 6])
        #expect(!state.keptStartingWeights && state.bestEvaluation?.step == 2)
        // Configurations without it encode as they always did (their digests and checkpoints unchanged).
        #expect(!JSON.canonicalString(Self.configuration(evaluatesAtStart: false)).contains("evaluatesAtStart"))
    }
}
