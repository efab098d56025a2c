import Adapters
import Foundation
import Testing
@testable import Training

@Suite struct AdamWTests {
    func single(_ value: Float) -> NamedTensors { NamedTensors(names: ["w"], shapes: [[1]], values: [[value]]) }

    @Test func takesTheHandComputedFirstStep() {
        // t = 1: m̂ = g and v̂ = g², so the step is lr·g/(|g| + ε) after decay by (1 − lr·λ):
        // θ = 1 · (1 − 0.1·0.01) − 0.1 · 0.5 / (0.5 + 1e-8) = 0.999 − 0.0999999980 = 0.8990000020
        let optimizer = AdamW(beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01, maxGradientNorm: nil)
        var parameters = single(1)
        var state = AdamWState.initial(for: parameters)
        optimizer.step(parameters: &parameters, gradients: [[0.5]], state: &state, learningRate: 0.1)
        #expect(state.step == 1)
        #expect(abs(parameters.values[0][0] - 0.899) < 1e-6)
        #expect(abs(state.firstMoment.values[0][0] - 0.05) < 1e-8)      // (1 − 0.9) · 0.5
        #expect(abs(state.secondMoment.values[0][0] - 0.00025) < 1e-9)  // (1 − 0.999) · 0.25
    }

    @Test func takesTheHandComputedSecondStep() {
        // t = 2 with g = 0.5 again, no decay: m = 0.095, v = 0.00049975, m̂ = 0.5, v̂ = 0.25, so the step is lr again.
        let optimizer = AdamW(weightDecay: 0, maxGradientNorm: nil)
        var parameters = single(1)
        var state = AdamWState.initial(for: parameters)
        optimizer.step(parameters: &parameters, gradients: [[0.5]], state: &state, learningRate: 0.1)
        optimizer.step(parameters: &parameters, gradients: [[0.5]], state: &state, learningRate: 0.1)
        #expect(abs(state.firstMoment.values[0][0] - 0.095) < 1e-7)
        #expect(abs(state.secondMoment.values[0][0] - 0.00049975) < 1e-9)
        #expect(abs(parameters.values[0][0] - 0.8) < 1e-6)
    }

    @Test func weightDecayIsDecoupledFromTheGradient() {
        // With a zero gradient Adam's step is 0/(0 + ε) = 0, so only the decay θ·(1 − lr·λ) moves the weight;
        // L2 regularisation folded into the gradient would instead take a full Adam step of size ≈ lr.
        let optimizer = AdamW(weightDecay: 0.1, maxGradientNorm: nil)
        var parameters = single(2)
        var state = AdamWState.initial(for: parameters)
        optimizer.step(parameters: &parameters, gradients: [[0]], state: &state, learningRate: 0.5)
        #expect(parameters.values[0][0] == 2 * Float(1 - 0.5 * 0.1))
    }

    @Test func withAnAnchorTheDecayPullsTowardItNotTowardZero() {
        // A zero gradient leaves only the decay: θ₀ + (θ − θ₀)·(1 − lr·λ) with the anchor θ₀ = 2, from θ = 3.
        let optimizer = AdamW(weightDecay: 0.1, maxGradientNorm: nil)
        var parameters = single(3)
        var state = AdamWState.initial(for: parameters)
        optimizer.step(parameters: &parameters, gradients: [[0]], state: &state, learningRate: 0.5, anchor: single(2))
        #expect(parameters.values[0][0] == 2 + 1 * Float(1 - 0.5 * 0.1))
        // A weight at its anchor stays there; without one it shrinks toward zero.
        var atAnchor = single(2)
        optimizer.step(parameters: &atAnchor, gradients: [[0]], state: &state, learningRate: 0.5, anchor: single(2))
        #expect(atAnchor.values[0][0] == 2)
        // The gradient step is the same either way: with the anchor at zero the two rules agree bit for bit.
        var anchored = single(0.75), plain = single(0.75)
        var anchoredState = AdamWState.initial(for: anchored), plainState = AdamWState.initial(for: plain)
        for g: Float in [0.5, -0.25, 1] {
            optimizer.step(parameters: &anchored, gradients: [[g]], state: &anchoredState, learningRate: 0.1, anchor: single(0))
            optimizer.step(parameters: &plain, gradients: [[g]], state: &plainState, learningRate: 0.1)
        }
        #expect(anchored.values[0][0].bitPattern == plain.values[0][0].bitPattern)
    }

    @Test func theAnchorRuleIsLeftOutOfTheEncodingWhenOff() throws {
        // Configurations checkpointed before the rule existed keep their digest.
        let text = String(decoding: try JSONEncoder().encode(AdamW()), as: UTF8.self)
        #expect(!text.contains("decaysTowardWeightsParent"))
        let on = AdamW(decaysTowardWeightsParent: true)
        #expect(try JSONDecoder().decode(AdamW.self, from: JSONEncoder().encode(on)) == on)
        #expect(try JSONDecoder().decode(AdamW.self, from: Data(text.utf8)) == AdamW())
    }

    @Test func matchesPyTorchsAdamWFormulaWithClippingAndCosineSchedule() {
        // Expected values printed by Reference/adamw_reference.py (numpy float32 in PyTorch's operation order).
        let optimizer = AdamW(beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01, maxGradientNorm: 1)
        let schedule = LearningRateSchedule.cosine(warmup: 2, floor: 0.1)
        var parameters = NamedTensors(names: ["w"], shapes: [[5]], values: [[0.5, -1.25, 2.0, 0.0, 3.5]])
        var state = AdamWState.initial(for: parameters)
        let expectedRates = [0.005, 0.01, 0.010000000000000002, 0.007750000000000001, 0.003250000000000001, 0.001]
        let expectedNorms = [1.6948451232280357, 1.2539936270529055, 1.3829316574148167, 1.6494317558247535,
                             1.962778640665166, 2.2961924848066064]
        for t in 1...6 {
            let d = Float(t)
            let g: [Float] = [0.3 * d, -0.7, 0.05 * (d - 2), 1.5 / d, -0.2 * d]
            let rate = schedule.rate(peak: 1e-2, step: t - 1, totalSteps: 6)
            #expect(abs(rate - expectedRates[t - 1]) < 1e-15)
            let norm = optimizer.step(parameters: &parameters, gradients: [g], state: &state, learningRate: rate)
            #expect(abs(norm - expectedNorms[t - 1]) < 1e-6)
        }
        let param: [Float] = [0.46438315510749817, -1.2127808332443237, 2.0019428730010986, -0.03374654799699783, 3.53413724899292]
        let m: [Float] = [0.2953872084617615, -0.19487066566944122, 0.02139253541827202, 0.16091714799404144, -0.19692480564117432]
        let v: [Float] = [0.002407646970823407, 0.0011352766305208206, 1.925856849993579e-05, 0.001352765946649015, 0.001070065307430923]
        for i in 0..<5 {
            #expect(abs(parameters.values[0][i] - param[i]) <= 2e-7 * max(1, abs(param[i])), "param \(i)")
            #expect(abs(state.firstMoment.values[0][i] - m[i]) <= 1e-7 * max(1e-3, abs(m[i])) + 1e-9, "m \(i)")
            #expect(abs(state.secondMoment.values[0][i] - v[i]) <= 1e-6 * abs(v[i]) + 1e-12, "v \(i)")
        }
    }

    @Test func clipsGradientsToTheGlobalNormAcrossTensors() {
        var gradients: [[Float]] = [[3], [4]]   // global norm 5
        let norm = AdamW.clip(&gradients, maxNorm: 1)
        #expect(norm == 5)
        #expect(abs(gradients[0][0] - 0.6) < 1e-6 && abs(gradients[1][0] - 0.8) < 1e-6)
        var small: [[Float]] = [[0.3], [0.4]]
        AdamW.clip(&small, maxNorm: 1)
        #expect(small == [[0.3], [0.4]])
    }

    @Test func refusesImpossibleHyperparameters() {
        #expect(throws: TrainingError.self) { try AdamW(beta1: 1).validate() }
        #expect(throws: TrainingError.self) { try AdamW(epsilon: 0).validate() }
        #expect(throws: TrainingError.self) { try AdamW(maxGradientNorm: -1).validate() }
    }
}

@Suite struct LearningRateScheduleTests {
    @Test func constantKeepsThePeak() {
        #expect((0..<5).map { LearningRateSchedule.constant.rate(peak: 0.1, step: $0, totalSteps: 5) } == [0.1, 0.1, 0.1, 0.1, 0.1])
    }

    @Test func linearWarmupRisesToThePeakThenHolds() {
        let rates = (0..<6).map { LearningRateSchedule.linearWarmup(warmup: 4).rate(peak: 1, step: $0, totalSteps: 6) }
        #expect(rates == [0.25, 0.5, 0.75, 1, 1, 1])
    }

    @Test func cosineWarmsUpThenFallsToTheFloorAtTheLastStep() {
        let schedule = LearningRateSchedule.cosine(warmup: 2, floor: 0.1)
        let rates = (0..<7).map { schedule.rate(peak: 1, step: $0, totalSteps: 7) }
        #expect(rates[0] == 0.5 && rates[1] == 1 && rates[2] == 1)
        #expect(abs(rates[4] - 0.55) < 1e-12)    // halfway down: floor + (1 − floor)/2
        #expect(abs(rates[6] - 0.1) < 1e-12)
        #expect(zip(rates.dropFirst(2), rates.dropFirst(3)).allSatisfy { $0 > $1 })
    }

    @Test func linearDecayWarmsUpThenFallsInAStraightLineToTheFloorAtTheLastStep() {
        let schedule = LearningRateSchedule.linearDecay(warmup: 2, floor: 0.1)
        let rates = (0..<7).map { schedule.rate(peak: 1, step: $0, totalSteps: 7) }
        #expect(rates[0] == 0.5 && rates[1] == 1 && rates[2] == 1)
        for (step, expected) in [(3, 0.775), (4, 0.55), (5, 0.325), (6, 0.1)] {
            #expect(abs(rates[step] - expected) < 1e-12, "step \(step): \(rates[step])")
        }
    }

    @Test func refusesAFloorAboveThePeak() {
        #expect(throws: TrainingError.self) { try LearningRateSchedule.cosine(warmup: 0, floor: 1.5).validate() }
    }
}
