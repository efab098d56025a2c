import AdaptCore
import Evaluation
import Foundation
import Model
import Pipelines
import Registry
import ReplayBuffer
import Storage

/// `adapt eval --lineage L --version N`: the engine scores a registered version (trained here or imported) on
/// the lineage's pinned held-out set against the active version, or the base model when none is active, runs the
/// promotion gate as the nightly eval step does, and stores the report it made (`EngineGateReport`), bound to
/// the adapter digest, the held-out snapshot digest and the incumbent. That report is what `registry promote`
/// accepts; a report brought from a file never is.
///
/// The eval step's pieces are reused: `HeldOutScorer` (formatting, truncation, mean token NLL), the score cache
/// and its key, the gate built from the pipeline's `eval` parameters. The held-out set is read as it stands
/// (`ReplayStore.currentHeldOut`): nothing is topped up or sampled, and no snapshot blob is written.
public enum VersionEvaluation {
    public struct Request: Sendable {
        public let lineage: ShortIdentifier
        public let version: Int
        /// The base model file; every adapter compared must have been trained on it.
        public let model: URL
        public let parameters: EvalParameters
        /// Tokens per scored sequence, as the train step's `max_length`.
        public let maxLength: Int
        /// The turn format; nil: the model's chat template.
        public let chatFormat: ChatConvention?

        public init(lineage: ShortIdentifier, version: Int, model: URL, parameters: EvalParameters = EvalParameters(),
                    maxLength: Int = Self.defaultMaxLength, chatFormat: ChatConvention? = nil) {
            (self.lineage, self.version, self.model) = (lineage, version, model)
            (self.parameters, self.maxLength, self.chatFormat) = (parameters, maxLength, chatFormat)
        }

        /// The nightly pipeline's `train.max_length`.
        public static let defaultMaxLength = 256
    }

    public struct Result: Sendable {
        public let version: AdapterVersion
        /// The version compared against, nil for the base model.
        public let incumbent: AdapterVersion?
        public let heldOutDigest: Digest
        public let gate: GateReport
        public let candidateMeanNLL: Double?
        public let incumbentMeanNLL: Double?
        /// Scores read from the score cache instead of computed (both sides, and the base model's canary replies).
        public let cachedScores: Int
        /// The canary's per-item figures, as the eval step records them; nil when the guard did not run.
        public let canaryMargins: EvalOutput.CanaryMargins?
    }

    public static func run(_ request: Request, registry: AdapterRegistry, clock: any Clock = SystemClock(),
                           log: (String) -> Void = { _ in }) throws -> Result {
        let version = try registry.version(VersionReference(lineage: request.lineage, number: request.version))
        let incumbent = try registry.active(lineage: request.lineage)
        if incumbent?.id == version.id {
            throw VersionEvaluationError.alreadyActive(lineage: request.lineage.value, version: version.name)
        }
        let heldOut = try ReplayStore(database: registry.connection, clock: clock).currentHeldOut(lineage: request.lineage.value)

        try BLAS.setThreads(1)
        let baseDigest = try Digest.sha256(fileAt: request.model)
        let base = BaseWeightStorage.f32
        let scorer = try HeldOutScorer(modelURL: request.model, maxLength: request.maxLength, base: base,
                                       chatFormat: request.chatFormat)
        let sequences = try scorer.sequences(heldOut.examples)
        let candidateWeights = try scorer.adapter(try registry.adapterData(version), name: "\(request.lineage)/\(version.name)",
                                                  baseModelDigest: baseDigest)
        let incumbentWeights = try incumbent.map {
            try scorer.adapter(try registry.adapterData($0), name: "\(request.lineage)/\($0.name)", baseModelDigest: baseDigest)
        }
        let cache = try ScoreCache(connection: registry.connection, clock: clock)
        let modelKey = EvalBody.scoreCacheKey(baseDigest: baseDigest, base: base, scorer: scorer)
        let incumbentKey: ScoreCache.Weights = incumbent.map { .adapter($0.adapterDigest) } ?? .base
        log("scoring \(sequences.count) held-out example(s) under \(version.name) and \(incumbent?.name ?? "the base model")")
        let (candidateScores, candidateCached, candidateFresh) = try scorer.score(
            sequences, adapter: candidateWeights, weights: .adapter(version.adapterDigest), cache: cache, modelKey: modelKey)
        let (incumbentScores, incumbentCached, incumbentFresh) = try scorer.score(
            sequences, adapter: incumbentWeights, weights: incumbentKey, cache: cache, modelKey: modelKey)
        let comparison = try HeldOutComparison(candidate: candidateScores, baseline: incumbentScores)
        var report = try EvalBody.gate(request.parameters).evaluate(comparison)
        // The forgetting guard, as the nightly eval step runs it: an imported adapter is held to the same canary.
        let canary = try request.parameters.canary.map {
            try EvalBody.canaryVerdict($0, set: CanarySet.current, scorer: scorer, candidate: candidateWeights,
                                       candidateBlob: version.adapterDigest, incumbent: incumbentWeights.map { ($0, incumbentKey) },
                                       cache: cache, modelKey: modelKey, clock: clock)
        }
        if let canary {
            report = report.judging(canary: canary.report)
            func figure(_ value: Double?, _ format: String) -> String { value.map { String(format: format, $0) } ?? "–" }
            log("canary: \(canary.report.outcome.rawValue) (median margin loss \(figure(canary.report.medianMarginLoss, "%.3g")), "
                + "p \(figure(canary.report.pValue, "%.4g"))"
                + (canary.report.fluency.map { ", median fluency loss \(figure($0.medianLoss, "%.3g")), p \(figure($0.pValue, "%.4g"))" } ?? "")
                + ")")
        }

        let reportJSON = try JSON.decode(JSONValue.self, from: JSON.canonical(report), context: "the gate report")
        var summary = try JSON.decode(GateSummary.self, from: JSON.canonical(report), context: "the gate report")
        summary.examples = comparison.examplesDigest
        func mean(_ values: [Double]) -> Double? { values.isEmpty ? nil : values.reduce(0, +) / Double(values.count) }
        let candidateMean = mean(comparison.candidateScores), incumbentMean = mean(comparison.baselineScores)
        var metrics = version.metrics
        (metrics.heldOutMeanNLL, metrics.baselineHeldOutMeanNLL, metrics.gate) = (candidateMean, incumbentMean, summary)
        // The scores, the report and the version's shown verdict commit together.
        try registry.connection.transaction {
            try cache.store(model: modelKey, weights: .adapter(version.adapterDigest), entries: candidateFresh)
            try cache.store(model: modelKey, weights: incumbentKey, entries: incumbentFresh)
            if let canary {
                try cache.store(model: modelKey, weights: .base, entries: canary.baseFresh)
                try cache.store(model: modelKey, weights: .adapter(version.adapterDigest), entries: canary.candidateFresh)
                try cache.store(model: modelKey, weights: incumbentKey, entries: canary.incumbentFresh)
            }
            try registry.recordGateReport(EngineGateReport(
                versionID: version.id, adapterDigest: version.adapterDigest, heldOutDigest: heldOut.digest,
                incumbentVersionID: incumbent?.id, incumbentDigest: incumbent?.adapterDigest, outcome: summary.outcome,
                report: reportJSON, maker: .evalCommand, madeAt: clock.nowMilliseconds()))
            try registry.recordMetrics(metrics, for: version.reference)
        }
        log("gate: \(report.outcome.rawValue) (n \(report.n), p \(report.pValue.map { String(format: "%.4g", $0) } ?? "–"))")
        return Result(version: version, incumbent: incumbent, heldOutDigest: heldOut.digest, gate: report,
                      candidateMeanNLL: candidateMean, incumbentMeanNLL: incumbentMean,
                      cachedScores: candidateCached + incumbentCached + (canary?.baseCached ?? 0),
                      canaryMargins: canary.map {
                          EvalOutput.CanaryMargins(base: $0.base.margins, candidate: $0.candidate.margins,
                                                   baseRightNLL: $0.base.rightNLL, candidateRightNLL: $0.candidate.rightNLL)
                      })
    }
}
