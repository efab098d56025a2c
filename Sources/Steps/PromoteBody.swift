import AdaptCore
import AdapterExchange
import Foundation
import Pipelines
import Registry
import ReplayBuffer
import Storage

/// The promote step: register tonight's candidate as the lineage's next version (whatever the gate said, so
/// the registry keeps every night's verdict), and make it active only when the eval step said `better`.
///
/// Registration, the pointer flip and the job's completion commit in one transaction: the writes run in the
/// completion hook on the job engine's own connection (`AdapterRegistry.on(db)`). Before committing, the
/// hook checks that the active adapter is still the one the eval step compared against; if it moved, the
/// transaction is rolled back and the step retries (and then registers without promoting, reason
/// `incumbent_moved`).
///
/// The version registered records its weights parent (`trained_from`): the version the train step started from.
///
/// Version numbers depend on the registry's whole history, not on this run's inputs, so they are reported
/// under `registry` (shown, not compared by replay); the compared result is the decision and the adapter.
public enum PromoteBody {
    public static func run(_ context: StepContext) throws -> StepOutcome {
        let environment = context.environment
        let common = try PlannedInput(context.input)
        let lineage = try ShortIdentifier(validating: common.lineage, field: "the lineage")
        let eval = try context.output(of: EvalOutput.self)
        let train = try context.output(of: TrainOutput.self)
        let sample = try context.output(of: SampleOutput.self)
        let blob = train.adapterBlob

        // A candidate whose training snapshot was erased after it trained is trained on erased text: it is not
        // registered, so no version escapes the list `data forget` gave its user.
        if let erasure = try ReplayStore.erasures(of: [sample.trainSnapshot], in: environment.database)[sample.trainSnapshot] {
            throw StepError.inputErased(run: "this run", step: "train", field: "inputs.train_snapshot",
                                        sentence: erasure.reason.sentence(at: erasure.at))
        }
        let registry = try AdapterRegistry(connection: environment.database, blobs: environment.blobs, clock: environment.clock)
        let activeBefore = try registry.active(lineage: lineage)
        // No step improved on the starting weights: the candidate is its weights parent (or the base model) again,
        // so nothing is registered and nothing moves; the output says why.
        if train.keptParent == true {
            environment.log("nothing to promote: training kept its starting weights (no step improved the validation loss)")
            return .completed(StepOutput(
                PromoteOutput(outcome: eval.outcome, promoted: false, reason: "kept_parent", adapterBlob: blob,
                              inputs: PromoteOutput.Inputs(activeAdapter: ComparedAdapter(activeBefore?.adapterDigest))),
                registry: ["version": .null, "active_before": activeBefore.map { .string($0.name) } ?? .null,
                           "active_after": activeBefore.map { .string($0.name) } ?? .null]))
        }
        // Started from a version retired since (`data forget --retire-adapters`): the candidate's weights carry the
        // erased text as its parent's do, so it is not registered, and the output says why.
        if let parent = try weightsParent(of: train, in: registry), try registry.version(parent).isRetired {
            environment.log("nothing to promote: the candidate started from \(parent), retired since")
            return .completed(StepOutput(
                PromoteOutput(outcome: eval.outcome, promoted: false, reason: "parent_retired", adapterBlob: blob,
                              inputs: PromoteOutput.Inputs(activeAdapter: ComparedAdapter(activeBefore?.adapterDigest))),
                registry: ["version": .null, "active_before": activeBefore.map { .string($0.name) } ?? .null,
                           "active_after": activeBefore.map { .string($0.name) } ?? .null]))
        }
        let stillCompared = ComparedAdapter(activeBefore?.adapterDigest) == ComparedAdapter(eval.incumbent?.adapterBlob)
        let promote = eval.outcome == .better && stillCompared
        let number = (try registry.versions(lineage: lineage).map(\.number).max() ?? 0) + 1
        let data = try environment.blobs.get(blob)
        let metadata = try self.metadata(context, train: train, sample: sample)
        let metrics = try self.metrics(train: train, eval: eval)
        let gateReport = try JSON.decode(JSONValue.self, from: JSON.canonical(eval.gate), context: "the eval step's gate report")
        let reason = promote ? "gate_better" : (eval.outcome == .better ? "incumbent_moved" : "gate_\(eval.outcome.rawValue)")
        let model = try? environment.modelURL(try context.manifestString("base_model", "name"))

        let finalize: @Sendable (any SQLConnection) throws -> Void = { db in
            let registry = registry.on(db)
            let active = try registry.active(lineage: lineage)
            guard active?.id == activeBefore?.id else {
                throw StepError.incumbentMoved(lineage: lineage.value, expected: activeBefore?.name ?? "base", actual: active?.name ?? "base")
            }
            // A weights parent retired between the check above and this transaction: the registry refuses it, and the
            // step ends with that reason (permanent: the candidate carries the erased text).
            let version = try registry.register(adapterData: data, lineage: lineage, parent: active?.reference,
                                                trainedFrom: try weightsParent(of: train, in: registry),
                                                metadata: metadata, metrics: metrics)
            guard version.number == number else {
                throw StepError.versionRace(lineage: lineage.value, expected: number, actual: version.number)
            }
            // The eval step's verdict is an engine gate report like the eval command's, and the pointer moves by
            // the same rule: bound to this adapter, this run's held-out snapshot and the incumbent still active.
            if stillCompared {
                try registry.recordGateReport(EngineGateReport(
                    versionID: version.id, adapterDigest: version.adapterDigest, heldOutDigest: sample.heldOutSnapshot,
                    incumbentVersionID: active?.id, incumbentDigest: active?.adapterDigest, outcome: metrics.gate?.outcome ?? .notEnoughEvidence,
                    report: gateReport, maker: .pipeline, madeAt: environment.clock.nowMilliseconds()))
            }
            if promote {
                try registry.promote(version.reference, reason: .gate, heldOut: sample.heldOutSnapshot, actor: ShortIdentifier("pipeline")!)
            }
        }
        // The export follows the committed pointer: written after the commit from what the registry then has active,
        // so a failed commit leaves it alone and a kill before it is repaired when `adapt work` starts again.
        let exportActive: @Sendable () -> Void = {
            PausePoint.reach("promote.before-export")
            guard let model else { return }
            let export = ActiveExportSync.follow(lineage: lineage, registry: registry, model: model, state: environment.state)
            for line in export.lines { environment.log(line) }
            if let failure = export.failure { environment.log("the active export of \(lineage) was not updated: \(failure)") }
        }
        environment.log("candidate \(lineage)/v\(number): \(promote ? "promoted" : "kept inactive") (\(reason))")
        return .completed(StepOutput(
            PromoteOutput(outcome: eval.outcome, promoted: promote, reason: reason, adapterBlob: blob,
                          inputs: PromoteOutput.Inputs(activeAdapter: ComparedAdapter(activeBefore?.adapterDigest))),
            registry: [
                "version": .string("v\(number)"),
                "active_before": activeBefore.map { .string($0.name) } ?? .null,
                "active_after": promote ? .string("v\(number)") : (activeBefore.map { .string($0.name) } ?? .null),
            ],
            finalize: finalize, afterCommit: promote ? exportActive : nil))
    }

    /// The version the candidate started from (the train step's `init.from`), when this registry holds it with the
    /// adapter the step read; nil for a candidate trained from zero, and in a replay's scratch registry, which holds
    /// only the active adapter under numbers of its own (registry facts are not compared).
    static func weightsParent(of train: TrainOutput, in registry: AdapterRegistry) throws -> VersionReference? {
        guard let name = train.initialization?.from, let digest = train.inputs.weightsParent,
              let reference = try? VersionReference(parsing: name),
              let version = try? registry.version(reference), version.adapterDigest == digest else { return nil }
        return version.reference
    }

    static func metadata(_ context: StepContext, train: TrainOutput, sample: SampleOutput) throws -> AdapterMetadata {
        // The promote job's input holds no training parameters; the run's resolved pipeline does.
        guard let definition = context.manifest["definition"]?["train"] else {
            throw StepError.notAPipelineRun(run: "this run", field: "definition.train")
        }
        let parameters = try PlannedInput.parameters(TrainParameters.self, from: definition)
        let common = try PlannedInput(context.input)
        let base = Digest(hex: try context.manifestString("base_model", "digest"))
        return AdapterMetadata(
            baseModel: base, chatConvention: ShortIdentifier(train.chatConvention),
            trainingExamples: train.trainingExamples, heldOutExamples: sample.heldOutExamples,
            trainingTokens: train.trainingTokens, dataset: sample.trainSnapshot,
            training: TrainingSummary(
                rank: parameters.rank, loraAlpha: parameters.alpha, learningRate: parameters.learningRate,
                steps: train.steps, batchSize: parameters.batchSize, seed: common.seed,
                // What the candidate was trained at: an `auto` train step recorded its count.
                blasThreads: train.inputs.blasThreads ?? parameters.blasThreads.fixedCount ?? 1,
                targetModules: parameters.targets.compactMap { ShortIdentifier($0.rawValue) },
                config: train.configDigest))
    }

    static func metrics(train: TrainOutput, eval: EvalOutput) throws -> VersionMetrics {
        var gate = try JSON.decode(GateSummary.self, from: JSON.canonical(eval.gate), context: "the eval step's gate report")
        gate.examples = eval.examplesDigest
        return VersionMetrics(finalTrainLoss: train.losses.last, heldOutMeanNLL: eval.candidateMeanNLL,
                              baselineHeldOutMeanNLL: eval.incumbentMeanNLL, gate: gate)
    }
}
