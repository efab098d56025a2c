import AdaptCore
import Evaluation
import Foundation
import Model
import Pipelines
import Registry
import ReplayBuffer
import Storage
import Training

/// The eval step: score the lineage's held-out snapshot under the incumbent (the active adapter, or the base
/// model when there is none) and under tonight's candidate, and run the promotion gate.
///
/// Convention, end to end: d = candidate NLL − incumbent NLL per example (Evaluation's `HeldOutComparison`),
/// so a better candidate has negative differences and the pipeline's `eval.alternative` is `less`. The gate
/// decides `better` / `not_enough_evidence` / `worse` from both one-sided tests whatever the alternative;
/// the alternative only chooses which test the report carries.
///
/// The output (`EvalOutput`) holds the whole gate report (`gate`), its `outcome`, both sides' per-example scores in
/// example-id order and their means, and which incumbent was compared (`incumbent`: `{version, adapter_blob}`
/// or null for the base model) so the promote step can check it is still the active one. Scores are cached
/// (Registry's `ScoreCache`): a promoted candidate's scores serve as the next night's incumbent scores. New
/// scores are cached by `finalize`, in the job's fenced completion transaction.
public enum EvalBody {
    public static func run(_ context: StepContext) throws -> StepOutcome {
        let environment = context.environment
        let common = try PlannedInput(context.input)
        let parameters = try PlannedInput.parameters(EvalParameters.self, from: context.input)
        let maxLength = context.input["max_length"]?.intValue ?? 256
        let threads = try StepThreads.of(context)
        try BLAS.setThreads(threads.count)

        let heldOutSnapshot = try context.output(of: SampleOutput.self).heldOutSnapshot
        let candidateBlob = try context.output(of: TrainOutput.self).adapterBlob
        let incumbent = try self.incumbent(context, lineage: common.lineage)

        let modelName = try context.manifestString("base_model", "name")
        let modelURL = try environment.modelURL(modelName)
        let baseDigest = try Digest.sha256(fileAt: modelURL)
        if context.recorded == nil, let expected = Digest(hex: try context.manifestString("base_model", "digest")),
           expected != baseDigest {
            throw StepError.modelChanged(name: modelName, expected: expected, actual: baseDigest)
        }
        let start = environment.clock.nowMilliseconds()
        let chatFormat = try TrainingPlan.chatConvention(context.input["chat_format"]?.stringValue.flatMap(ChatFormat.init(rawValue:)))
        let base = try StepBaseWeights.storage(input: context.input, step: context.name, kind: StepKind.eval.rawValue)
        let forward = try StepBaseWeights.forward(input: context.input, step: context.name, kind: StepKind.eval.rawValue)
        let markers = try StepPromptMarkers.rule(input: context.input, step: context.name, kind: StepKind.eval.rawValue)
        let scorer = try HeldOutScorer(modelURL: modelURL, maxLength: maxLength, base: base, forward: forward, chatFormat: chatFormat,
                                       markers: markers)
        let sequences = try scorer.sequences(try context.snapshot(heldOutSnapshot, field: "held_out_snapshot"))
        let candidateWeights = try scorer.adapter(try environment.blobs.get(candidateBlob), name: "candidate \(candidateBlob.short)",
                                                  baseModelDigest: baseDigest)
        let incumbentWeights = try incumbent.map {
            try scorer.adapter(try environment.blobs.get($0.adapterBlob), name: $0.version, baseModelDigest: baseDigest)
        }
        let cache = try ScoreCache(connection: environment.database, clock: environment.clock)
        let modelKey = scoreCacheKey(baseDigest: baseDigest, base: base, scorer: scorer)
        let incumbentKey: ScoreCache.Weights = incumbent.map { .adapter($0.adapterBlob) } ?? .base
        let (candidateScores, _, candidateFresh) = try scorer.score(sequences, adapter: candidateWeights, weights: .adapter(candidateBlob),
                                                                    cache: cache, modelKey: modelKey)
        let (incumbentScores, cached, incumbentFresh) = try scorer.score(sequences, adapter: incumbentWeights, weights: incumbentKey,
                                                                         cache: cache, modelKey: modelKey)
        let comparison = try HeldOutComparison(candidate: candidateScores, baseline: incumbentScores)
        var report = try gate(parameters).evaluate(comparison)
        // The forgetting guard, in a run planned with it on: the candidate against the base model on the engine's
        // canary (in a replay, the set the run recorded).
        let canary = try parameters.canary.map { guardParameters in
            let recordedSet = try context.recordedOutput(EvalOutput.self)?.gate.report.canary?.canary
            return try canaryVerdict(guardParameters, set: try canarySet(recorded: recordedSet), scorer: scorer,
                                     candidate: candidateWeights, candidateBlob: candidateBlob,
                                     incumbent: incumbentWeights.map { ($0, incumbentKey) }, cache: cache, modelKey: modelKey,
                                     clock: environment.clock)
        }
        if let canary { report = report.judging(canary: canary.report) }
        // Under the fill-first rule each example imported while the held-out set is short is held out, so the
        // pairs missing are the examples to import. A run recorded before that rule keeps its report's shape,
        // so that it replays equal.
        let readiness = GateReadiness(heldOut: report.pairs, minPairs: report.minPairs)
        let current = try context.heldOutRule() != .halfCapped
        environment.log("gate: \(report.outcome.rawValue) (n \(report.n), p \(report.pValue.map { String(format: "%.4g", $0) } ?? "–"))"
                        + (readiness.canBeJudged ? "" : "; \(readiness.sentence)"))

        // A run planned before `on_worse` existed has none in its eval input: it neither attributes nor
        // quarantines, so it replays equal.
        let attributes = context.input["on_worse"] != nil
        var attribution: SourceAttribution?
        let attributionStart = environment.clock.nowMilliseconds()
        if attributes, report.outcome == .worse {
            attribution = try self.attribution(context, lineage: common.lineage, incumbent: incumbent, scorer: scorer,
                                               candidate: candidateWeights, heldOut: sequences)
        }
        let attributionSeconds = Double(environment.clock.nowMilliseconds() - attributionStart) / 1000
        let quarantine = parameters.onWorse == .quarantine ? attribution?.blamed ?? [] : []
        if let attribution {
            environment.log("attribution: \(attribution.sources.count) source(s) since the incumbent, \(attribution.blamed.count) blamed"
                            + (quarantine.isEmpty ? "" : ", quarantined"))
        }
        let night = common.night.description
        // Cache rows name adapter blobs, and the quarantine changes what later nights sample: both are written
        // only if this attempt completes, in its fenced completion transaction.
        let finalize: @Sendable (any SQLConnection) throws -> Void = { db in
            let cache = cache.on(db)
            try cache.store(model: modelKey, weights: .adapter(candidateBlob), entries: candidateFresh)
            try cache.store(model: modelKey, weights: incumbentKey, entries: incumbentFresh)
            if let canary {
                try cache.store(model: modelKey, weights: .base, entries: canary.baseFresh)
                try cache.store(model: modelKey, weights: .adapter(candidateBlob), entries: canary.candidateFresh)
                try cache.store(model: modelKey, weights: incumbentKey, entries: canary.incumbentFresh)
            }
            if !quarantine.isEmpty {
                let marked = try ReplayStore.quarantine(sources: quarantine, lineage: common.lineage, night: night,
                                                        now: environment.clock.nowMilliseconds(), in: db)
                environment.log("quarantined \(marked) training example(s) of \(quarantine.count) source(s)")
            }
        }
        let seconds = Double(environment.clock.nowMilliseconds() - start) / 1000

        func mean(_ values: [Double]) -> Double? { values.isEmpty ? nil : values.reduce(0, +) / Double(values.count) }
        let output = EvalOutput(
            outcome: report.outcome,
            gate: RecordedGateReport(report, includesMorePairsNeeded: current,
                                     includesGuards: context.input["min_effect"] != nil || context.input[CanaryGuard.field] != nil),
            heldOutExamples: comparison.pairs.count, examplesDigest: comparison.examplesDigest,
            candidateScores: comparison.candidateScores, incumbentScores: comparison.baselineScores,
            candidateMeanNLL: mean(comparison.candidateScores), incumbentMeanNLL: mean(comparison.baselineScores),
            incumbent: incumbent,
            worse: attributes ? EvalOutput.WorseHandling(onWorse: parameters.onWorse, attribution: attribution, quarantinedSources: quarantine) : nil,
            gateReadiness: current ? readiness : nil,
            canaryMargins: canary.map { verdict in
                // The right replies' NLL only where the guard tested it: a run planned before keeps its output's bytes.
                let fluency = parameters.canary?.fluencyDelta != nil
                return EvalOutput.CanaryMargins(base: verdict.base.margins, candidate: verdict.candidate.margins,
                                                baseRightNLL: fluency ? verdict.base.rightNLL : nil,
                                                candidateRightNLL: fluency ? verdict.candidate.rightNLL : nil)
            },
            plannedWithCanary: context.input[CanaryGuard.field] != nil,
            inputs: EvalOutput.Inputs(baseModel: baseDigest, heldOutSnapshot: heldOutSnapshot, candidateAdapter: candidateBlob,
                                      incumbentAdapter: ComparedAdapter(incumbent?.adapterBlob), blasThreads: threads.recorded))
        return .completed(StepOutput(
            output,
            timing: ["seconds": .double(seconds), "incumbent_scores_cached": .int(cached)]
                .merging(canary.map { ["canary_base_scores_cached": .int($0.baseCached), "canary_seconds": .double($0.seconds)] } ?? [:]) { a, _ in a }
                .merging(attribution == nil ? [:] : ["attribution_seconds": .double(attributionSeconds)]) { a, _ in a },
            finalize: finalize))
    }

    /// The score cache's model key: the base model and the BLAS threads. Scores kept in f32 keep the key they
    /// always had; quantized ones differ in their last bits, so they get their own. Scores of the int8 forward
    /// kernels differ from sgemm's in their fourth digit: a key of their own too, under the name they were first
    /// recorded by (`int8-avx512vnni`, now `int8-v1`: the same arithmetic), so scores cached before stay found.
    static func scoreCacheKey(baseDigest: Digest, base: BaseWeightStorage, scorer: HeldOutScorer) -> Digest {
        let forwardKernels = scorer.model.forwardKernels == "sgemm" ? "sgemm" : "int8-avx512vnni"
        return Digest.sha256("\(baseDigest.hex)/blas_threads=\(BLAS.threads)" + (base == .f32 ? "" : "/base_weights=\(base.rawValue)")
                             + (forwardKernels == "sgemm" ? "" : "/forward_kernels=\(forwardKernels)"))
    }

    /// The promotion gate the pipeline's `eval` parameters describe (one-sided Wilcoxon signed-rank), with its
    /// minimum effect (none in a step planned before `min_effect`).
    static func gate(_ parameters: EvalParameters) throws -> PromotionGate {
        try PromotionGate(alpha: parameters.alpha, minimumPairs: parameters.minPairs,
                          options: WilcoxonOptions(alternative: .init(rawValue: parameters.alternative.rawValue) ?? .less,
                                                   zeroMethod: .init(rawValue: parameters.zeroMethod.rawValue) ?? .wilcox),
                          minimumEffect: parameters.minEffect)
    }

    /// The forgetting guard's verdict and what it measured.
    struct CanaryVerdict: Sendable {
        let report: CanaryReport
        let base: CanaryScores
        let candidate: CanaryScores
        /// Scores to cache in the caller's transaction: the base model's (reused by every later night) and the candidate's.
        let baseFresh: [ScoreCache.Entry]
        let candidateFresh: [ScoreCache.Entry]
        /// The incumbent's canary scores, when fluency is measured against it and they were not cached (its own
        /// night caches them as a candidate's, so normally none).
        let incumbentFresh: [ScoreCache.Entry]
        let baseCached: Int
        let seconds: Double
    }

    /// The set a run uses: the one a replayed run recorded, else the engine's current one.
    static func canarySet(recorded name: String?) throws -> CanarySet {
        guard let name else { return CanarySet.current }
        guard let set = CanarySet.named(name) else {
            throw StepError.replayNotPossible(run: "this run", reason: "its eval step used the canary set \(name), which this engine does not ship")
        }
        return set
    }

    /// Scores `set` under the base model (from the cache after the first night) and the candidate, and runs the
    /// forgetting guard on the margins and, when the guard has its fluency part, the right replies' NLL. Margins are
    /// judged against the base: nights that each lose a little ability must not add up to a model that lost much.
    /// Fluency is judged against `parameters.fluencyReference` (CanaryGuard says why the incumbent): the `incumbent`
    /// version's scores, or the base's on a lineage's first night; a step planned before the choice has none and
    /// judges it against the base, as recorded.
    static func canaryVerdict(_ parameters: CanaryGuard, set: CanarySet, scorer: HeldOutScorer, candidate: LoRAParameters,
                              candidateBlob: Digest, incumbent: (weights: LoRAParameters, key: ScoreCache.Weights)?,
                              cache: ScoreCache, modelKey: Digest, clock: any Clock) throws -> CanaryVerdict {
        let start = clock.nowMilliseconds()
        let scoring = try CanaryScoring(set: set, scorer: scorer)
        let base = try scoring.scores(scorer: scorer, adapter: nil, weights: .base, cache: cache, modelKey: modelKey)
        let tuned = try scoring.scores(scorer: scorer, adapter: candidate, weights: .adapter(candidateBlob), cache: cache, modelKey: modelKey)
        var reference: (name: String, scores: CanaryScores)?
        var incumbentFresh: [ScoreCache.Entry] = []
        switch (parameters.fluencyDelta == nil ? nil : parameters.fluencyReference, incumbent) {
        case (nil, _):
            reference = nil
        case (.incumbent?, let incumbent?):
            let scored = try scoring.scores(scorer: scorer, adapter: incumbent.weights, weights: incumbent.key, cache: cache, modelKey: modelKey)
            reference = ("incumbent", scored.scores)
            incumbentFresh = scored.fresh
        case (.incumbent?, nil), (.base?, _):
            reference = ("base", base.scores)
        }
        let report = try ForgettingGuard(delta: parameters.delta, alpha: parameters.alpha, fluencyDelta: parameters.fluencyDelta)
            .evaluate(base: base.scores, candidate: tuned.scores, canary: set.name, digest: set.digest.hex, fluencyReference: reference)
        return CanaryVerdict(report: report, base: base.scores, candidate: tuned.scores, baseFresh: base.fresh,
                             candidateFresh: tuned.fresh, incumbentFresh: incumbentFresh, baseCached: base.cached,
                             seconds: Double(clock.nowMilliseconds() - start) / 1000)
    }

    /// The attribution of a worse candidate (`SourceAttribution`): the window runs from the incumbent's
    /// registration (in a replay, the one recorded) to the prune step's clock reading; the examples measured
    /// are those tonight's train step trained on (its sample without the early-stopping tail).
    static func attribution(_ context: StepContext, lineage: String, incumbent: EvalOutput.Incumbent?,
                            scorer: HeldOutScorer, candidate: LoRAParameters,
                            heldOut: [(id: String, sequence: TrainingSequence)]) throws -> SourceAttribution {
        let since: Int64?
        if let recorded = try context.recordedOutput(EvalOutput.self) {
            since = recorded.worse?.attribution?.since
        } else if incumbent != nil, let name = ShortIdentifier(lineage) {
            let registry = try AdapterRegistry(connection: context.environment.database, blobs: context.environment.blobs)
            since = try registry.active(lineage: name).flatMap { $0.adapterDigest == incumbent?.adapterBlob ? $0.createdAt : nil }
        } else {
            since = nil
        }
        let until = try context.outputIfAny(of: PruneOutput.self)?.now
        // What the train step ran with: the job input its output recorded.
        let trained: TrainParameters
        do {
            trained = try PlannedInput.parameters(TrainParameters.self,
                                                  from: StepRecord.recordedInput(of: try context.ancestor(StepKind.train.rawValue)) ?? .null)
        } catch is CoreError {
            throw StepError.malformedOutput(step: StepKind.train.rawValue, field: "input")
        }
        let sample = try context.snapshot(try context.output(of: SampleOutput.self).trainSnapshot, field: "train_snapshot")
        let validation = TrainingPlan.validationCount(examples: sample.count, earlyStopping: trained.earlyStopping != nil,
                                                      smallSamples: trained.initFrom != nil)
        return try SourceAttribution.measure(scorer: scorer, candidate: candidate, heldOut: heldOut,
                                             training: Array(sample.dropLast(validation)), lineage: lineage, since: since,
                                             until: until, learningRate: trained.learningRate,
                                             fallsBackToEverySource: LaterRule.blameEverySource.holds(for: context.input),
                                             database: context.environment.database)
    }

    /// The adapter to beat: in a live run the lineage's active version; in a replay the one recorded.
    static func incumbent(_ context: StepContext, lineage: String) throws -> EvalOutput.Incumbent? {
        if let recorded = try context.recordedOutput(EvalOutput.self) { return recorded.incumbent }
        guard let name = ShortIdentifier(lineage) else { return nil }
        let registry = try AdapterRegistry(connection: context.environment.database, blobs: context.environment.blobs)
        guard let active = try registry.active(lineage: name) else { return nil }
        return EvalOutput.Incumbent(version: active.reference.description, adapterBlob: active.adapterDigest)
    }
}
