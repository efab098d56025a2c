import AdaptCore
import Foundation
import Testing
@testable import Evaluation

/// How often the gate promotes a candidate that is no better (candidate and incumbent losses drawn from the
/// same distribution), for the `min_pairs` defaults one could choose; BENCHMARKS.md and pipelines/README.md
/// quote the figures these tests print.
struct NullDataFalsePromotionTests {
    static let gates = 2000
    static let candidates = [5, 8, 10, 20]

    /// `gates` seeded comparisons of `n` pairs; per example d = candidate − incumbent, both uniform on [2, 3)
    /// (null) or d uniform on [−0.7, 0.3) (70 % of examples improve). Returns how many were promoted.
    static func promotions(n: Int, null: Bool, seed: UInt64) throws -> Int {
        let rng = CounterRNG(seed: seed)
        let gate = try PromotionGate(minimumPairs: 0)
        var promoted = 0
        for trial in 0..<gates {
            let step = UInt64(trial)
            var baseline: [Double] = []
            var candidate: [Double] = []
            for i in 0..<n {
                let b: Double = 2 + rng.uniform(.test, step: step, index: UInt32(2 * i))
                let u: Double = rng.uniform(.test, step: step, index: UInt32(2 * i + 1))
                baseline.append(b)
                candidate.append(null ? 2 + u : b - 0.7 + u)
            }
            if try gate.evaluate(candidate: candidate, baseline: baseline).outcome == .better { promoted += 1 }
        }
        return promoted
    }

    /// The exact probability that the gate promotes under the null with n untied pairs: the mass of the R+
    /// values whose exact one-sided p-value is below α.
    static func exactFalsePromotionRate(n: Int, alpha: Double = PromotionGate.defaultAlpha) -> Double {
        let law = WilcoxonNullDistribution(n: n)
        var rate = 0.0
        for r in 0...(n * (n + 1) / 2) where law.cdf(r) < alpha { rate = law.cdf(r) }
        return rate
    }

    @Test func theFewestPairsThatCanPromoteFollowFromAlpha() throws {
        #expect(PromotionGate.smallestDecisivePairs(alpha: 0.05) == 5)
        #expect(PromotionGate.smallestDecisivePairs(alpha: 0.01) == 7)
        #expect(PromotionGate.smallestDecisivePairs(alpha: 0.1) == 4)
        #expect(PromotionGate.smallestDecisivePairs(alpha: 0.5) == 2)
        // At α = 0.05 four pairs that all improve cannot promote (p = 1/16); five can (p = 1/32).
        let gate = try PromotionGate(minimumPairs: 0)
        for n in [4, 5] {
            let (candidate, baseline) = pairedLosses(n: n, shift: -0.5)
            let report = try gate.evaluate(candidate: candidate, baseline: baseline)
            #expect(report.outcome == (n == 5 ? .better : .notEnoughEvidence), "n \(n): p \(report.pValue ?? -1)")
        }
        #expect(PromotionGate.defaultMinimumPairs >= PromotionGate.smallestDecisivePairs(alpha: PromotionGate.defaultAlpha))
    }

    @Test(arguments: candidates)
    func sameDistributionScoresPromoteAtMostAlphaOfTheTime(n: Int) throws {
        let alpha = PromotionGate.defaultAlpha
        let exact = Self.exactFalsePromotionRate(n: n)
        #expect(exact <= alpha && exact > 0, "n \(n): exact rate \(exact)")
        let promoted = try Self.promotions(n: n, null: true, seed: 2026 + UInt64(n))
        let observed = Double(promoted) / Double(Self.gates)
        // The draw is seeded, so the count is fixed; the bound allows three standard errors of a binomial
        // count at the exact rate, so an anti-conservative gate (a rate above α) fails it.
        let standardError = (exact * (1 - exact) / Double(Self.gates)).squareRoot()
        #expect(observed <= exact + 3 * standardError && observed <= alpha, "n \(n): \(promoted) of \(Self.gates) promoted")
        let power = Double(try Self.promotions(n: n, null: false, seed: 4052 + UInt64(n))) / Double(Self.gates)
        print(String(format: "gate null-data: n %2d  exact false-promotion %.4f  observed %d/%d = %.4f  power (70%% improve) %.3f",
                     n, exact, promoted, Self.gates, observed, power))
    }
}
