/// The forgetting guard: does a candidate keep what the base model could already do?
///
/// On a canary of general prompts, each with a right and a wrong reply, two things are measured per item (the caller
/// scores them, `CanaryScores`):
/// - ability, the margin m = log p(right) − log p(wrong); d = base margin − candidate margin is how much of the base's
///   preference for the right reply the candidate lost. A style moves both replies alike and leaves m mostly alone.
/// - fluency, the mean token NLL of the right reply; d_f = candidate NLL − base NLL is how much less likely, per
///   token, the candidate finds the plain right answer. A memorising adapter keeps the margin (it still prefers the
///   right reply of two given ones) but loses the plain answer itself; a style moves it a little.
///
/// Each part is a test of non-inferiority with the burden on the candidate (Wellek, "Testing Statistical Hypotheses
/// of Equivalence and Noninferiority", 2nd ed., ch. 5): H0 median(d) ≥ δ, H1 median(d) < δ, by a one-sided Wilcoxon
/// signed-rank test on d − δ (alternative `less`, SciPy's defaults otherwise). A part passes only when its H0 is
/// rejected at level α: with too little evidence, or a test that cannot be run, it fails. The guard passes when
/// every part it runs passes. A guard without a fluency δ (`fluencyDelta` nil) runs the margin part alone: the rule
/// of runs planned before the fluency part existed.
///
/// Fluency may be measured against another reference than the base (`evaluate(…, fluencyReference:)`): the nightly
/// pipeline compares it with the version the gate compares against, so a style's small steps do not add up to a
/// refusal over many nights while one night's collapse still fails (CanaryGuard in Pipelines says why).
public struct ForgettingGuard: Sendable, Equatable {
    /// The largest median loss of margin, in nats, that still counts as keeping what the base could do: at 2 the
    /// right reply's odds against the wrong one may fall e² ≈ 7.4-fold on the typical item. Chosen after canary-v1's
    /// first measurement, where good style adapters lost a median 1.1–1.2 nats (docs/gate-and-registry.md).
    public static let defaultDelta = 2.0
    /// The largest median rise, in nats per token, of the right replies' mean token NLL: at 1 the plain right answer
    /// may become at most e times less likely per token on the typical item. Chosen after the same measurement.
    public static let defaultFluencyDelta = 1.0
    public static let defaultAlpha = 0.05

    public var delta: Double
    public var alpha: Double
    /// nil: no fluency part (runs planned before it).
    public var fluencyDelta: Double?

    public init(delta: Double = ForgettingGuard.defaultDelta, alpha: Double = ForgettingGuard.defaultAlpha,
                fluencyDelta: Double? = ForgettingGuard.defaultFluencyDelta) throws {
        guard delta.isFinite, delta >= 0 else { throw EvaluationError.invalidCanaryDelta(delta) }
        guard alpha > 0, alpha <= 0.5 else { throw EvaluationError.invalidAlpha(alpha) }
        if let fluencyDelta, !(fluencyDelta.isFinite && fluencyDelta >= 0) { throw EvaluationError.invalidFluencyDelta(fluencyDelta) }
        self.delta = delta
        self.alpha = alpha
        self.fluencyDelta = fluencyDelta
    }

    /// Judges per-item scores, `base` and `candidate` of the same canary items in the same order; `canary` and
    /// `digest` name the set (recorded in the report). The right replies' NLL is read only when the guard has a
    /// fluency part. Throws only for malformed input (unequal lengths, non-finite scores).
    ///
    /// `fluencyReference`, when given, replaces the base as the fluency part's reference: d_f = candidate − reference
    /// NLL; its `name` is recorded (`fluency_reference`).
    public func evaluate(base: CanaryScores, candidate: CanaryScores, canary: String, digest: String,
                         fluencyReference: (name: String, scores: CanaryScores)? = nil) throws -> CanaryReport {
        let losses = try Self.differences(base.margins, candidate.margins, side: "margin").map { -$0 }   // d = base − candidate
        let margin = try NonInferiorityPart.test(losses: losses, delta: delta, alpha: alpha)
        guard let fluencyDelta else {
            return CanaryReport(guard: self, canary: canary, digest: digest, base: base, candidate: candidate, losses: losses,
                                margin: margin, fluency: nil, reason: marginOnlyReason(margin))
        }
        // d_f = candidate − reference (the base unless another is given)
        let reference = fluencyReference?.scores.rightNLL ?? base.rightNLL
        let fluencyLosses = try Self.differences(reference, candidate.rightNLL, side: "right reply NLL")
        let fluency = try NonInferiorityPart.test(losses: fluencyLosses, delta: fluencyDelta, alpha: alpha)
        let reason = "margin: " + marginSentence(margin) + "; fluency: "
            + fluencySentence(fluency, delta: fluencyDelta, against: fluencyReference?.name)
        return CanaryReport(guard: self, canary: canary, digest: digest, base: base, candidate: candidate, losses: losses,
                            margin: margin, fluency: (fluencyLosses, fluency, fluencyReference), reason: reason)
    }

    /// candidate − base per item, after checking both sides.
    static func differences(_ base: [Double], _ candidate: [Double], side: String) throws -> [Double] {
        guard base.count == candidate.count else {
            throw EvaluationError.unequalLengths(candidate: candidate.count, baseline: base.count)
        }
        if let bad = base.firstIndex(where: { !$0.isFinite }) { throw EvaluationError.nonFiniteScore(side: "base \(side)", index: bad) }
        if let bad = candidate.firstIndex(where: { !$0.isFinite }) {
            throw EvaluationError.nonFiniteScore(side: "candidate \(side)", index: bad)
        }
        return zip(candidate, base).map { $0 - $1 }
    }

    /// The reason of a margin-only guard, word for word as runs planned before the fluency part recorded it.
    private func marginOnlyReason(_ part: NonInferiorityPart) -> String {
        if let error = part.notRun {
            return "the non-inferiority test could not be run (\(error.description)), so the candidate did not show it keeps the base's margins"
        }
        return part.passes
            ? "the candidate loses less than \(delta) of the base's margin at alpha \(alpha)"
            : "the candidate did not show it loses less than \(delta) of the base's margin at alpha \(alpha) (p \(part.result?.pValue ?? 1))"
    }

    private func marginSentence(_ part: NonInferiorityPart) -> String {
        if let error = part.notRun { return "the test could not be run (\(error.description)), so the candidate did not show it keeps the base's margins" }
        return part.passes
            ? "the candidate loses less than \(delta) nats of the base's margin at alpha \(alpha) (p \(part.result?.pValue ?? 1))"
            : "the candidate did not show it loses less than \(delta) nats of the base's margin at alpha \(alpha) (p \(part.result?.pValue ?? 1))"
    }

    /// `against`: the reference's name when it is not the base (the sentence of a base-referenced guard is unchanged).
    private func fluencySentence(_ part: NonInferiorityPart, delta: Double, against reference: String?) -> String {
        if let error = part.notRun {
            return "the test could not be run (\(error.description)), so the candidate did not show it keeps the right replies' likelihood"
        }
        let rise = "rises by less than \(delta) nats" + (reference.map { " over the \($0)'s" } ?? "")
        return part.passes
            ? "the right replies' mean token NLL \(rise) at alpha \(alpha) (p \(part.result?.pValue ?? 1))"
            : "the candidate did not show the right replies' mean token NLL \(rise) at alpha \(alpha) (p \(part.result?.pValue ?? 1))"
    }
}

/// One model's scores on a canary, per item in the set's order.
public struct CanaryScores: Sendable, Equatable {
    /// log p(right) − log p(wrong), in nats.
    public var margins: [Double]
    /// The mean token NLL of the right reply, in nats per token (empty when not measured).
    public var rightNLL: [Double]

    public init(margins: [Double], rightNLL: [Double] = []) {
        self.margins = margins
        self.rightNLL = rightNLL
    }
}

/// One part of the guard: a one-sided Wilcoxon signed-rank test of non-inferiority on losses − δ.
struct NonInferiorityPart: Sendable, Equatable {
    /// nil when the test could not be run.
    let result: WilcoxonResult?
    /// Why the test could not be run.
    let notRun: EvaluationError?
    let passes: Bool

    var outcome: CanaryOutcome { passes ? .passes : .fails }

    static func test(losses: [Double], delta: Double, alpha: Double) throws -> NonInferiorityPart {
        let shifted = losses.map { $0 - delta }   // negative where the item kept what the base had, within δ
        do {
            let result = try WilcoxonSignedRank.test(differences: shifted, options: WilcoxonOptions(alternative: .less))
            return NonInferiorityPart(result: result, notRun: nil, passes: result.pValue < alpha)
        } catch let error as EvaluationError {
            switch error {
            case .noPairs, .undefinedNormalApproximation, .permutationNeedsTwoPairs:
                return NonInferiorityPart(result: nil, notRun: error, passes: false)
            default: throw error
            }
        }
    }
}

/// The forgetting guard's verdict.
public enum CanaryOutcome: String, Sendable, Codable, CaseIterable {
    /// The candidate showed it keeps what the base could do (every part passed).
    case passes
    /// It did not: the gate's outcome is `forgets` unless the held-out set already says `worse`.
    case fails
}
