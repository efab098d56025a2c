import AdaptCore
import Foundation
import Testing
@testable import Inference

private func options(_ configure: (inout SamplingOptions) -> Void) -> SamplingOptions {
    var o = SamplingOptions()
    o.topK = 0
    o.topP = 1
    o.minP = 0
    o.temperature = 1
    configure(&o)
    return o
}

private func expectClose(_ a: [Float], _ b: [Float], tolerance: Float = 1e-6) {
    #expect(a.count == b.count)
    for (x, y) in zip(a, b) { #expect(abs(x - y) <= tolerance, "\(a) vs \(b)") }
}

@Test func repetitionPenaltyDividesPositiveAndMultipliesNegativeLogitsThenSubtractsPresenceAndFrequency() {
    let sampler = Sampler(options {
        $0.repeatPenalty = 2; $0.presencePenalty = 0.5; $0.frequencyPenalty = 0.25
    })
    var logits: [Float] = [2, -2, 1, 0.5]
    sampler.applyPenalties(&logits, history: [0, 1, 0])
    // token 0 seen twice: 2 / 2 − (2 · 0.25 + 0.5) = 0; token 1 once: −2 · 2 − (0.25 + 0.5) = −4.75.
    #expect(logits == [0, -4.75, 1, 0.5])
}

@Test func penaltiesLookOnlyAtTheLastWindowTokens() {
    let sampler = Sampler(options { $0.repeatPenalty = 2; $0.frequencyPenalty = 0.25; $0.penaltyWindow = 2 })
    var logits: [Float] = [2, -2, 1, 0.5]
    sampler.applyPenalties(&logits, history: [2, 0, 1, 0][...].suffix(3))
    // The window is [1, 0]: token 2 (outside it) keeps its logit, token 0 counts once.
    #expect(logits == [0.75, -4.25, 1, 0.5])
}

@Test func greedyTakesTheLargestLogitAfterPenaltiesAndTheLowerIdOnTies() {
    #expect(Sampler(.greedy).sample([1, 3, 2, 3], history: [], position: 0) == 1)
    var penalised = SamplingOptions.greedy
    penalised.repeatPenalty = 4
    #expect(Sampler(penalised).sample([1, 3, 2, 3], history: [1, 3], position: 2) == 2)
    #expect(Sampler(.greedy).distribution([1, 3, 2, 3], history: []).map(\.id) == [1])
}

@Test func topKKeepsTheKLargestLogitsLowerIdFirstAmongEquals() {
    let kept = Sampler(options { $0.topK = 2 }).distribution([1, 3, 2, 3, -1], history: [])
    #expect(kept.map(\.id) == [1, 3])
    expectClose(kept.map(\.probability), [0.5, 0.5])
    // The heap path and the sort path agree on a larger random vector.
    let rng = CounterRNG(seed: 9)
    let logits = (0..<5000).map { Float(rng.normal(.test, index: UInt32($0))) }
    let heap = Sampler.topK(logits, k: 40).map(\.id)
    let sorted = Array(Sampler.topK(logits, k: 0).prefix(40)).map(\.id)
    #expect(heap == sorted)
}

@Test func topPKeepsTheShortestPrefixReachingTheMass() {
    let logits: [Float] = [0.5, 0.3, 0.15, 0.05].map { logf($0) }
    let kept = Sampler(options { $0.topP = 0.75 }).distribution(logits, history: [])
    #expect(kept.map(\.id) == [0, 1])
    expectClose(kept.map(\.probability), [0.625, 0.375])
}

@Test func minPDropsTokensLessLikelyThanAFractionOfTheBest() {
    let logits: [Float] = [0.05, 0.5, 0.15, 0.3].map { logf($0) }
    let kept = Sampler(options { $0.minP = 0.2 }).distribution(logits, history: [])
    #expect(kept.map(\.id) == [1, 3, 2])
    expectClose(kept.map(\.probability), [0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95])
}

@Test func temperatureScalesLogitsAfterTheFiltersSawTemperatureOneProbabilities() {
    // Top-p at temperature 1 keeps 0.6 and 0.3 (0.9 ≥ 0.85); only then does temperature 2 flatten them.
    let logits: [Float] = [0.6, 0.3, 0.1].map { logf($0) }
    let kept = Sampler(options { $0.topP = 0.85; $0.temperature = 2 }).distribution(logits, history: [])
    #expect(kept.map(\.id) == [0, 1])
    let a = Float(0.6).squareRoot(), b = Float(0.3).squareRoot()
    expectClose(kept.map(\.probability), [a / (a + b), b / (a + b)])
    let cold = Sampler(options { $0.temperature = 0.5 }).distribution([0, logf(2)], history: [])
    expectClose(cold.map(\.probability), [0.8, 0.2])
    #expect(cold.map(\.id) == [1, 0])
}

@Test(arguments: [UInt64(1), 2, 3, 42])
func drawIsTheInverseCDFOfTheSeededUniformAtThePosition(seed: UInt64) {
    let logits: [Float] = [0.5, 0.3, 0.2].map { logf($0) }
    var o = options { _ in }
    o.seed = seed
    for position in 0..<20 {
        let u = CounterRNG(seed: seed).uniform(.generation, step: UInt64(position), index: 0)
        let expected: Int32 = u < 0.5 ? 0 : u < 0.8 ? 1 : 2
        // Skip draws within rounding distance of a bucket edge, where Float sums may differ from Double.
        if abs(u - 0.5) < 1e-5 || abs(u - 0.8) < 1e-5 { continue }
        #expect(Sampler(o).sample(logits, history: [], position: position) == expected)
    }
}

@Test func sameSeedGivesTheSameDrawsAndAnotherSeedOthers() {
    let rng = CounterRNG(seed: 5)
    let logits = (0..<300).map { Float(rng.normal(.test, index: UInt32($0))) }
    func draws(_ seed: UInt64) -> [Int32] {
        var o = SamplingOptions()
        o.seed = seed
        o.temperature = 1.5
        o.topK = 100
        o.topP = 1
        o.minP = 0
        return (0..<64).map { Sampler(o).sample(logits, history: [], position: $0) }
    }
    #expect(draws(7) == draws(7))
    #expect(draws(7) != draws(8))
}

@Test func drawFrequenciesFollowTheDistribution() {
    let logits: [Float] = [0.5, 0.3, 0.2].map { logf($0) }
    let sampler = Sampler(options { $0.seed = 11 })
    var counts = [0, 0, 0]
    let n = 20_000
    for position in 0..<n { counts[Int(sampler.sample(logits, history: [], position: position))] += 1 }
    let frequencies = counts.map { Double($0) / Double(n) }
    for (f, p) in zip(frequencies, [0.5, 0.3, 0.2]) { #expect(abs(f - p) < 0.015, "\(frequencies)") }
}

@Test func optionsOutOfRangeAreRefusedByName() {
    var o = SamplingOptions()
    o.topP = 0
    #expect(throws: InferenceError.self) { try o.validate() }
    o = SamplingOptions()
    o.repeatPenalty = 0
    do { try o.validate(); Issue.record("accepted repeat penalty 0") } catch {
        #expect("\(error)".contains("--repeat-penalty"))
    }
}
