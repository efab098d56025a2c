import Testing
@testable import Evaluation

@Test func pairsScoresByExampleIdWhateverTheOrder() throws {
    let candidate = [ExampleScore(exampleID: "b", meanNLL: 1.0), ExampleScore(exampleID: "a", meanNLL: 2.0)]
    let baseline = [ExampleScore(exampleID: "a", meanNLL: 2.5), ExampleScore(exampleID: "b", meanNLL: 0.5)]
    let comparison = try HeldOutComparison(candidate: candidate, baseline: baseline)
    #expect(comparison.pairs.map(\.exampleID) == ["a", "b"])
    #expect(comparison.differences == [-0.5, 0.5])
    let shuffled = try HeldOutComparison(candidate: candidate.reversed(), baseline: baseline.reversed())
    #expect(shuffled == comparison)
    #expect(shuffled.examplesDigest == comparison.examplesDigest)
}

@Test func refusesAnExampleScoredOnOneSideOnly() {
    let a = ExampleScore(exampleID: "a", meanNLL: 1), b = ExampleScore(exampleID: "b", meanNLL: 1)
    #expect(throws: EvaluationError.unpairedExample(id: "b", missingFrom: "baseline")) {
        try HeldOutComparison(candidate: [a, b], baseline: [a])
    }
    #expect(throws: EvaluationError.unpairedExample(id: "b", missingFrom: "candidate")) {
        try HeldOutComparison(candidate: [a], baseline: [a, b])
    }
}

@Test func refusesDuplicateAndNonFiniteScores() {
    let a = ExampleScore(exampleID: "a", meanNLL: 1)
    #expect(throws: EvaluationError.duplicateExample(id: "a", side: "candidate")) {
        try HeldOutComparison(candidate: [a, a], baseline: [a])
    }
    #expect(throws: EvaluationError.nonFiniteScore(side: "baseline", index: 0)) {
        try HeldOutComparison(candidate: [a], baseline: [ExampleScore(exampleID: "a", meanNLL: .nan)])
    }
}

@Test func gateAcceptsAComparison() throws {
    let candidate = (0..<12).map { ExampleScore(exampleID: "e\($0)", meanNLL: 1.0 + Double($0) * 0.01) }
    let baseline = (0..<12).map { ExampleScore(exampleID: "e\($0)", meanNLL: 1.5 + Double($0) * 0.013) }
    let report = try PromotionGate().evaluate(try HeldOutComparison(candidate: candidate, baseline: baseline))
    #expect(report.outcome == .better)
    #expect(report.n == 12)
}
