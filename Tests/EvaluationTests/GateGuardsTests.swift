import AdaptCore
import Foundation
import Testing
@testable import Evaluation

/// The minimum effect and the forgetting guard (issue 42, items 4 and 5), on numbers made up for the purpose.

@Test func aTinyButConsistentImprovementIsNotEnoughEvidenceUnderAMinimumEffect() throws {
    // Ten pairs each about 1e-4 better: the signed-rank test sees only the signs, p = 2^-10.
    let baseline = (0..<10).map { 2 + Double($0) / 10 }
    let candidate = baseline.enumerated().map { i, b in b - 1e-4 * (1 + Double(i) / 100) }
    let plain = try PromotionGate().evaluate(candidate: candidate, baseline: baseline)
    #expect(plain.outcome == .better && plain.pValue == pow(2.0, -10))
    #expect(plain.minEffect == nil)

    let guarded = try PromotionGate(minimumEffect: 0.02).evaluate(candidate: candidate, baseline: baseline)
    #expect(guarded.outcome == .notEnoughEvidence)
    #expect(guarded.pValue == plain.pValue, "the test is the same; only the verdict changes")
    #expect(guarded.minEffect == 0.02)
    #expect(guarded.reason.contains("below the minimum effect of 0.02"), "\(guarded.reason)")
}

@Test func anImprovementAsLargeAsTheMinimumEffectIsStillBetter() throws {
    let (candidate, baseline) = pairedLosses(n: 30, shift: -0.1)
    let report = try PromotionGate(minimumEffect: 0.05).evaluate(candidate: candidate, baseline: baseline)
    #expect(report.outcome == .better)
    // A worse candidate stays worse whatever the minimum: the minimum only asks more of `better`.
    let (worse, base) = pairedLosses(n: 30, shift: 0.1)
    #expect(try PromotionGate(minimumEffect: 0.5).evaluate(candidate: worse, baseline: base).outcome == .worse)
}

@Test func aMinimumEffectMustBeANonNegativeNumber() {
    #expect(throws: EvaluationError.invalidMinimumEffect(-0.1)) { try PromotionGate(minimumEffect: -0.1) }
    #expect(throws: EvaluationError.self) { try PromotionGate(minimumEffect: .nan) }
}

@Test func theGateReportCarriesMinEffectAndCanaryAsExplicitNulls() throws {
    let (candidate, baseline) = pairedLosses(n: 12, shift: -0.1)
    let report = try PromotionGate().evaluate(candidate: candidate, baseline: baseline)
    let fields = try #require(try JSON.decode(JSONValue.self, from: JSON.canonical(report), context: "report").objectValue)
    #expect(fields["min_effect"] == .null)
    #expect(fields["canary"] == .null)
    let decoded = try JSONDecoder().decode(GateReport.self, from: JSON.canonical(report))
    #expect(decoded == report)
}

/// Base margins of 36 items and a candidate that keeps them up to `loss` nats, with seeded spread.
func canaryMargins(loss: Double, spread: Double = 0.3, seed: UInt64 = 11) -> (base: [Double], candidate: [Double]) {
    let rng = CounterRNG(seed: seed)
    let base = (0..<36).map { 2 + 6 * rng.uniform(.test, step: 0, index: UInt32($0)) }
    let candidate = base.enumerated().map { i, m in m - loss - spread * (rng.uniform(.test, step: 1, index: UInt32(i)) - 0.5) }
    return (base, candidate)
}

/// The margin part alone, as runs planned before the fluency part judge.
let marginOnly = try! ForgettingGuard(delta: 1, fluencyDelta: nil)

extension ForgettingGuard {
    func evaluate(base: [Double], candidate: [Double], canary: String, digest: String) throws -> CanaryReport {
        try evaluate(base: CanaryScores(margins: base), candidate: CanaryScores(margins: candidate), canary: canary, digest: digest)
    }
}

@Test func aCandidateThatKeepsTheBaseMarginsPassesTheForgettingGuard() throws {
    let (base, candidate) = canaryMargins(loss: 0.1)
    let report = try marginOnly.evaluate(base: base, candidate: candidate, canary: "test", digest: "00")
    #expect(report.outcome == .passes, "\(report.reason)")
    #expect(try #require(report.pValue) < 0.05)
    #expect(report.items == 36 && report.delta == 1)
    #expect(abs(try #require(report.medianMarginLoss) - 0.1) < 0.2)
}

@Test func aCandidateThatLosesMoreThanDeltaFailsTheForgettingGuard() throws {
    let (base, candidate) = canaryMargins(loss: 3)
    let report = try marginOnly.evaluate(base: base, candidate: candidate, canary: "test", digest: "00")
    #expect(report.outcome == .fails)
    #expect(try #require(report.pValue) > 0.5)
}

@Test func theBurdenIsOnTheCandidate() throws {
    // Losing about δ itself: the test cannot reject "median loss ≥ δ", so the candidate fails.
    let (base, candidate) = canaryMargins(loss: 1, spread: 0.4)
    #expect(try marginOnly.evaluate(base: base, candidate: candidate, canary: "t", digest: "00").outcome == .fails)
    // Too few items to show anything fails too.
    let few = try marginOnly.evaluate(base: [3, 4], candidate: [3, 4], canary: "t", digest: "00")
    #expect(few.outcome == .fails)
    // No items at all is a failure with its reason, not an error.
    let none = try marginOnly.evaluate(base: [], candidate: [], canary: "t", digest: "00")
    #expect(none.outcome == .fails && none.reason.contains("could not be run"))
}

@Test func precedenceIsWorseThenForgetsThenBetter() throws {
    let failing = try marginOnly.evaluate(base: canaryMargins(loss: 3).base, candidate: canaryMargins(loss: 3).candidate,
                                          canary: "t", digest: "00")
    let passing = try marginOnly.evaluate(base: canaryMargins(loss: 0).base, candidate: canaryMargins(loss: 0).candidate,
                                          canary: "t", digest: "00")
    try #require(failing.outcome == .fails && passing.outcome == .passes)
    func heldOut(_ shift: Double) throws -> GateReport {
        let (candidate, baseline) = pairedLosses(n: 30, shift: shift)
        return try PromotionGate().evaluate(candidate: candidate, baseline: baseline)
    }
    let better = try heldOut(-0.1), worse = try heldOut(0.1), unclear = try heldOut(0)
    try #require(better.outcome == .better && worse.outcome == .worse && unclear.outcome == .notEnoughEvidence)

    #expect(worse.judging(canary: failing).outcome == .worse, "worse before forgets")
    #expect(better.judging(canary: failing).outcome == .forgets, "forgets before better")
    #expect(unclear.judging(canary: failing).outcome == .forgets)
    #expect(better.judging(canary: passing).outcome == .better)
    #expect(unclear.judging(canary: passing).outcome == .notEnoughEvidence)
    let judged = better.judging(canary: failing)
    #expect(judged.canary == failing && judged.pValue == better.pValue)
    #expect(judged.reason.contains("forgetting guard") && judged.reason.contains("on the held-out set alone: better"))
}

@Test func forgettingGuardParametersAreChecked() {
    #expect(throws: EvaluationError.invalidCanaryDelta(-1)) { try ForgettingGuard(delta: -1) }
    #expect(throws: EvaluationError.invalidAlpha(0.7)) { try ForgettingGuard(alpha: 0.7) }
    #expect(throws: EvaluationError.invalidFluencyDelta(-0.5)) { try ForgettingGuard(fluencyDelta: -0.5) }
    #expect(throws: EvaluationError.self) { try ForgettingGuard(fluencyDelta: .infinity) }
}
