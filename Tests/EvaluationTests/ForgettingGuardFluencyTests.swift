import AdaptCore
import Foundation
import Testing
@testable import Evaluation

/// The forgetting guard's two parts, ability (margin) and fluency (the right reply's mean token NLL), on numbers made
/// up in the shapes measured on the default model (BENCHMARKS.md, "Forgetting guard"): a style loses about 1.1 nats of
/// margin and 0.1–0.4 nats per token of fluency; a memorising adapter keeps its margins and loses 4–5 nats per token.

/// Base and candidate scores of 36 items: the candidate loses `marginLoss` nats of margin and its right replies' mean
/// token NLL rises by `fluencyLoss`, each with seeded spread.
func canaryScores(marginLoss: Double, fluencyLoss: Double, spread: Double = 0.6, seed: UInt64 = 5) -> (base: CanaryScores, candidate: CanaryScores) {
    let rng = CounterRNG(seed: seed)
    func noise(_ step: UInt64, _ i: Int) -> Double { spread * (rng.uniform(.test, step: step, index: UInt32(i)) - 0.5) }
    let margins = (0..<36).map { 2 + 6 * rng.uniform(.test, step: 0, index: UInt32($0)) }
    let nll = (0..<36).map { 0.8 + 1.2 * rng.uniform(.test, step: 1, index: UInt32($0)) }
    return (CanaryScores(margins: margins, rightNLL: nll),
            CanaryScores(margins: margins.enumerated().map { i, m in m - marginLoss - noise(2, i) },
                         rightNLL: nll.enumerated().map { i, x in x + fluencyLoss + noise(3, i) }))
}

@Test func aStyleThatShiftsMarginsAndFluencyALittlePassesBothParts() throws {
    let (base, candidate) = canaryScores(marginLoss: 1.15, fluencyLoss: 0.3)
    let report = try ForgettingGuard().evaluate(base: base, candidate: candidate, canary: "t", digest: "00")
    #expect(report.outcome == .passes, "\(report.reason)")
    let fluency = try #require(report.fluency)
    #expect(fluency.marginOutcome == .passes && fluency.outcome == .passes)
    #expect(fluency.delta == ForgettingGuard.defaultFluencyDelta && report.delta == ForgettingGuard.defaultDelta)
    #expect(abs(try #require(fluency.medianLoss) - 0.3) < 0.2)
    // The same candidate under the margin alone at its old δ of 1 nat fails: what the fluency part made possible.
    let old = try ForgettingGuard(delta: 1, fluencyDelta: nil).evaluate(base: base, candidate: candidate, canary: "t", digest: "00")
    #expect(old.outcome == .fails)
}

@Test func aMemorisingCandidateThatKeepsItsMarginsFailsOnFluency() throws {
    let (base, candidate) = canaryScores(marginLoss: -0.2, fluencyLoss: 4.5)
    let report = try ForgettingGuard().evaluate(base: base, candidate: candidate, canary: "t", digest: "00")
    #expect(report.outcome == .fails)
    let fluency = try #require(report.fluency)
    #expect(fluency.marginOutcome == .passes, "the margin alone does not see it")
    #expect(fluency.outcome == .fails && (fluency.pValue ?? 0) > 0.5)
    #expect(try #require(fluency.candidateMeanRightNLL) > (fluency.baseMeanRightNLL ?? .infinity) + 4)
    #expect(report.reason.contains("fluency: the candidate did not show"), "\(report.reason)")
}

@Test func aCandidateThatLosesItsMarginsFailsEvenWhenFluent() throws {
    let (base, candidate) = canaryScores(marginLoss: 3, fluencyLoss: 0)
    let report = try ForgettingGuard().evaluate(base: base, candidate: candidate, canary: "t", digest: "00")
    #expect(report.outcome == .fails)
    #expect(report.fluency?.marginOutcome == .fails && report.fluency?.outcome == .passes)
    #expect(report.reason.hasPrefix("margin: the candidate did not show"), "\(report.reason)")
}

@Test func aFluencyFailureIsForgetsBelowWorseAndAboveBetter() throws {
    let (base, candidate) = canaryScores(marginLoss: 0, fluencyLoss: 3)
    let failing = try ForgettingGuard().evaluate(base: base, candidate: candidate, canary: "t", digest: "00")
    try #require(failing.outcome == .fails && failing.fluency?.marginOutcome == .passes)
    func heldOut(_ shift: Double) throws -> GateReport {
        let (candidate, baseline) = pairedLosses(n: 30, shift: shift)
        return try PromotionGate().evaluate(candidate: candidate, baseline: baseline)
    }
    #expect(try heldOut(0.1).judging(canary: failing).outcome == .worse)
    #expect(try heldOut(-0.1).judging(canary: failing).outcome == .forgets)
    #expect(try heldOut(0).judging(canary: failing).outcome == .forgets)
}

@Test func theFluencyPartsFiguresAreAddedToTheReportAndReadBack() throws {
    let (base, candidate) = canaryScores(marginLoss: 0.5, fluencyLoss: 0.2)
    let report = try ForgettingGuard().evaluate(base: base, candidate: candidate, canary: "t", digest: "00")
    let fields = try #require(try JSON.decode(JSONValue.self, from: JSON.canonical(report), context: "report").objectValue)
    for key in ["fluency_delta", "margin_outcome", "fluency_outcome", "fluency_n", "fluency_statistic", "fluency_p_value",
                "fluency_method", "median_fluency_loss", "base_mean_right_nll", "candidate_mean_right_nll"] {
        #expect(fields[key] != nil, "\(key)")
    }
    #expect(fields["fluency_delta"]?.doubleValue == 1 && fields["fluency_outcome"] == .string("passes"))
    #expect(try JSONDecoder().decode(CanaryReport.self, from: JSON.canonical(report)) == report)
}

@Test func aMarginOnlyGuardWritesTheReportItWroteBeforeTheFluencyPart() throws {
    let (base, candidate) = canaryScores(marginLoss: 0.1, fluencyLoss: 9, spread: 0.3)
    let report = try ForgettingGuard(delta: 1, alpha: 0.05, fluencyDelta: nil)
        .evaluate(base: base, candidate: candidate, canary: "t", digest: "00")
    #expect(report.outcome == .passes, "the right replies' NLL is not read")
    #expect(report.fluency == nil)
    #expect(report.reason == "the candidate loses less than 1.0 of the base's margin at alpha 0.05")
    let fields = try #require(try JSON.decode(JSONValue.self, from: JSON.canonical(report), context: "report").objectValue)
    #expect(Set(fields.keys) == ["canary", "canary_digest", "items", "delta", "alpha", "n", "statistic", "p_value", "method",
                                 "median_margin_loss", "base_mean_margin", "candidate_mean_margin", "outcome", "reason"])
    #expect(try JSONDecoder().decode(CanaryReport.self, from: JSON.canonical(report)) == report)
}

@Test func rightReplyScoresMustPairWithTheMargins() throws {
    let (base, candidate) = canaryScores(marginLoss: 0, fluencyLoss: 0)
    let short = CanaryScores(margins: candidate.margins, rightNLL: Array(candidate.rightNLL.dropLast()))
    #expect(throws: EvaluationError.unequalLengths(candidate: 35, baseline: 36)) {
        try ForgettingGuard().evaluate(base: base, candidate: short, canary: "t", digest: "00")
    }
    var bad = candidate
    bad.rightNLL[4] = .nan
    #expect(throws: EvaluationError.nonFiniteScore(side: "candidate right reply NLL", index: 4)) {
        try ForgettingGuard().evaluate(base: base, candidate: bad, canary: "t", digest: "00")
    }
}

/// Warm-started nights add a style's small fluency moves up: measured against the base, a chain whose nights each
/// move 0.3 fails by its fourth; against the version before it (the incumbent) each night passes, and a night that
/// collapses onto its training text still fails. The reference is recorded; a guard judged against the base keeps
/// its old report shape.
@Test func fluencyAgainstTheIncumbentPassesAChainsStepsAndStillRefusesACollapse() throws {
    let (base, _) = canaryScores(marginLoss: 0, fluencyLoss: 0)
    func shifted(_ scores: CanaryScores, fluency: Double, margin: Double = 0.2) -> CanaryScores {
        CanaryScores(margins: scores.margins.map { $0 - margin }, rightNLL: scores.rightNLL.map { $0 + fluency })
    }
    let third = shifted(base, fluency: 0.9, margin: 0.6)          // three nights of a style
    let fourth = shifted(third, fluency: 0.35, margin: 0.2)
    let againstBase = try ForgettingGuard().evaluate(base: base, candidate: fourth, canary: "t", digest: "00")
    #expect(againstBase.outcome == .fails, "1.25 nats above the base")
    let againstIncumbent = try ForgettingGuard().evaluate(base: base, candidate: fourth, canary: "t", digest: "00",
                                                          fluencyReference: ("incumbent", third))
    #expect(againstIncumbent.outcome == .passes, "\(againstIncumbent.reason)")
    #expect(againstIncumbent.reason.contains("over the incumbent's"))
    let fields = try JSON.decode(JSONValue.self, from: JSON.canonical(againstIncumbent), context: "report")
    #expect(fields["fluency_reference"] == .string("incumbent"))
    #expect(abs((fields["reference_mean_right_nll"]?.doubleValue ?? 0) - (fields["base_mean_right_nll"]?.doubleValue ?? 0) - 0.9) < 1e-9)
    #expect(fields["fluency_reference"] != nil && JSON.canonicalString(againstBase).contains("fluency_reference") == false)
    let collapse = try ForgettingGuard().evaluate(base: base, candidate: shifted(third, fluency: 3.5, margin: -0.3), canary: "t",
                                                  digest: "00", fluencyReference: ("incumbent", third))
    #expect(collapse.outcome == .fails && collapse.fluency?.outcome == .fails)
}
