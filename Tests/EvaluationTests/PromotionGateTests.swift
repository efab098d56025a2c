import AdaptCore
import Foundation
import Testing
@testable import Evaluation

/// Baseline losses and a candidate shifted by `shift` with small seeded noise (so there are no ties).
func pairedLosses(n: Int, shift: Double, seed: UInt64 = 7) -> (candidate: [Double], baseline: [Double]) {
    let rng = CounterRNG(seed: seed)
    let baseline = (0..<n).map { 2 + rng.uniform(.test, step: 0, index: UInt32($0)) }
    let candidate = baseline.enumerated().map { i, b in
        b + shift + 0.05 * (rng.uniform(.test, step: 1, index: UInt32(i)) - 0.5)
    }
    return (candidate, baseline)
}

@Test func candidateWithClearlyLowerLossesIsBetter() throws {
    let (candidate, baseline) = pairedLosses(n: 30, shift: -0.1)
    let report = try PromotionGate().evaluate(candidate: candidate, baseline: baseline)
    #expect(report.outcome == .better)
    #expect(report.method == "exact")
    #expect(report.statistic == 0)  // every difference negative: R+ = 0
    #expect(try #require(report.pValue) < 1e-6)
    #expect(try #require(report.effectSize) == -1)
}

@Test func candidateWithClearlyHigherLossesIsWorse() throws {
    let (candidate, baseline) = pairedLosses(n: 30, shift: 0.1)
    let report = try PromotionGate().evaluate(candidate: candidate, baseline: baseline)
    #expect(report.outcome == .worse)
    #expect(try #require(report.pValue) > 0.99)  // the reported p-value is the requested 'less' test's
    // The 'greater' test's p-value, the evidence for the refusal, is in the reason: 30 negative-free pairs
    // give the exact p = 2^-30.
    #expect(report.reason.hasSuffix("(p \(pow(2.0, -30)), alternative greater)"), "\(report.reason)")
}

@Test func noShiftIsNotEnoughEvidence() throws {
    let (candidate, baseline) = pairedLosses(n: 40, shift: 0)
    let report = try PromotionGate().evaluate(candidate: candidate, baseline: baseline)
    #expect(report.outcome == .notEnoughEvidence)
}

@Test func fewerPairsThanTheMinimumIsNotEnoughEvidenceEvenWhenSignificant() throws {
    let (candidate, baseline) = pairedLosses(n: 9, shift: -0.5)
    let loose = try PromotionGate(minimumPairs: 5).evaluate(candidate: candidate, baseline: baseline)
    #expect(loose.outcome == .better)  // 9 negative differences: p = 2⁻⁹
    let strict = try PromotionGate(minimumPairs: 10).evaluate(candidate: candidate, baseline: baseline)
    #expect(strict.outcome == .notEnoughEvidence)
    #expect(strict.reason.contains("below the minimum of 10"))
    #expect(strict.pValue == loose.pValue)
}

@Test func allZeroDifferencesAreNotEnoughEvidenceUnderEveryZeroMethod() throws {
    let scores = [Double](repeating: 1.25, count: 20)
    for zeroMethod in ZeroMethod.allCases {
        let gate = try PromotionGate(options: WilcoxonOptions(zeroMethod: zeroMethod))
        let report = try gate.evaluate(candidate: scores, baseline: scores)
        #expect(report.outcome == .notEnoughEvidence, "\(zeroMethod)")
        #expect(report.zeros == 20)
    }
}

@Test func emptyComparisonIsNotEnoughEvidenceWithNullStatistics() throws {
    let report = try PromotionGate().evaluate(candidate: [], baseline: [])
    #expect(report.outcome == .notEnoughEvidence)
    #expect(report.statistic == nil && report.pValue == nil && report.medianDifference == nil)
    let json = String(decoding: JSON.canonical(report), as: UTF8.self)
    #expect(json.contains("\"p_value\":null"))
}

@Test func malformedScoresThrowTypedErrors() throws {
    #expect(throws: EvaluationError.unequalLengths(candidate: 2, baseline: 1)) {
        try PromotionGate().evaluate(candidate: [1, 2], baseline: [1])
    }
    #expect(throws: EvaluationError.nonFiniteScore(side: "baseline", index: 1)) {
        try PromotionGate().evaluate(candidate: [1, 2], baseline: [1, .nan])
    }
    #expect(throws: EvaluationError.nonFiniteScore(side: "candidate", index: 0)) {
        try PromotionGate().evaluate(candidate: [.infinity], baseline: [1])
    }
    #expect(throws: EvaluationError.invalidAlpha(0.7)) { try PromotionGate(alpha: 0.7) }
}

@Test func twoSidedGateTakesTheDirectionFromTheRankSums() throws {
    let gate = try PromotionGate(options: WilcoxonOptions(alternative: .twoSided))
    let lower = pairedLosses(n: 25, shift: -0.1), higher = pairedLosses(n: 25, shift: 0.1)
    #expect(try gate.evaluate(candidate: lower.candidate, baseline: lower.baseline).outcome == .better)
    #expect(try gate.evaluate(candidate: higher.candidate, baseline: higher.baseline).outcome == .worse)
}

@Test func greaterAlternativeReportsItsOwnPValueButTheSameVerdict() throws {
    let (candidate, baseline) = pairedLosses(n: 30, shift: -0.1)
    let gate = try PromotionGate(options: WilcoxonOptions(alternative: .greater))
    let report = try gate.evaluate(candidate: candidate, baseline: baseline)
    #expect(report.outcome == .better)
    #expect(try #require(report.pValue) > 0.99)
}

@Test func gateReportJSONHasTheDesignFieldNames() throws {
    let (candidate, baseline) = pairedLosses(n: 12, shift: -0.2)
    let report = try PromotionGate().evaluate(candidate: candidate, baseline: baseline)
    let object = try #require(try JSONDecoder().decode(JSONValue.self, from: JSON.canonical(report)).objectValue)
    for key in ["n", "statistic", "p_value", "method", "zero_method", "alternative", "median_difference", "effect_size", "outcome"] {
        #expect(object[key] != nil, "missing \(key)")
    }
    #expect(object["outcome"] == .string("better"))
    #expect(object["zero_method"] == .string("wilcox"))
    let decoded = try JSONDecoder().decode(GateReport.self, from: JSON.canonical(report))
    #expect(decoded == report)
}

@Test(arguments: [0, 1, 5, 20, 50])
func exactDistributionSumsToOneAndIsSymmetric(n: Int) {
    let law = WilcoxonNullDistribution(n: n)
    #expect(Swift.abs(law.probabilities.reduce(0, +) - 1) < 1e-12)
    #expect(law.probabilities == law.probabilities.reversed())
    #expect(law.cdf(n * (n + 1) / 2) == 1)
}

@Test func exactDistributionGivesTheAllNegativePatternItsWeight() {
    // P(R+ = 0) = 2⁻ⁿ: only the all-negative sign pattern.
    #expect(WilcoxonNullDistribution(n: 10).cdf(0) == 1.0 / 1024)
}

@Test func exactMethodRefusesSamplesBeyondItsLimit() throws {
    let d = (1...(WilcoxonSignedRank.exactLimit + 1)).map { Double($0) * (($0 % 3 == 0) ? 1 : -1) }
    #expect(throws: EvaluationError.exactTooLarge(n: d.count, limit: WilcoxonSignedRank.exactLimit)) {
        try WilcoxonSignedRank.test(differences: d, options: WilcoxonOptions(method: .exact))
    }
    #expect(try WilcoxonSignedRank.test(differences: d, options: WilcoxonOptions(method: .auto)).method == .approx)
}
