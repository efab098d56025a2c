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
/// Version numbers depend on the registry's whole history, not on this run's inputs, so they are reported
/// under `registry` (shown, not compared by replay); the compared result is the decision and the adapter.
public enum PromoteBody {
    public static func run(_ context: StepContext) throws -> StepOutcome {
        let environment = context.environment
        let common = try PlannedInput(context.input)
        let lineage = try ShortIdentifier(validating: common.lineage, field: "the lineage")
        let eval = try context.ancestor("eval")
        let train = try context.ancestor("train")
        let sample = try context.ancestor("sample")
        guard let outcome = eval["outcome"]?.stringValue else { throw StepError.malformedOutput(step: "eval", field: "outcome") }
        let blob = try context.digest("adapter_blob", of: "train")
        let comparedBlob = eval["incumbent"]?["adapter_blob"]?.stringValue ?? "base"

        // A candidate whose training snapshot was erased after it trained is trained on erased text: it is not
        // registered, so no version escapes the list `data forget` gave its user.
        if let dataset = sample["train_snapshot"]?.stringValue.flatMap(Digest.init(hex:)),
           let erasure = try ReplayStore.erasures(of: [dataset], in: environment.database)[dataset] {
            throw StepError.inputErased(run: "this run", step: "train", field: "inputs.train_snapshot",
                                        sentence: erasure.reason.sentence(at: erasure.at))
        }
        let registry = try AdapterRegistry(database: environment.database, blobs: environment.blobs, clock: environment.clock)
        let activeBefore = try registry.active(lineage: lineage)
        let stillCompared = (activeBefore?.adapterDigest.hex ?? "base") == comparedBlob
        let promote = outcome == "better" && stillCompared
        let number = (try registry.versions(lineage: lineage).map(\.number).max() ?? 0) + 1
        let data = try environment.blobs.get(blob)
        let metadata = try self.metadata(context, train: train, sample: sample)
        let metrics = try self.metrics(train: train, eval: eval)
        let reason = promote ? "gate_better" : (outcome == "better" ? "incumbent_moved" : "gate_\(outcome)")
        let model = try? environment.modelURL(try context.manifestString("base_model", "name"))

        let finalize: @Sendable (Database) throws -> Void = { db in
            let registry = registry.on(db)
            let active = try registry.active(lineage: lineage)
            guard active?.id == activeBefore?.id else {
                throw StepError.incumbentMoved(lineage: lineage.value, expected: activeBefore?.name ?? "base", actual: active?.name ?? "base")
            }
            let version = try registry.register(adapterData: data, lineage: lineage, parent: active?.reference,
                                                metadata: metadata, metrics: metrics)
            guard version.number == number else {
                throw StepError.versionRace(lineage: lineage.value, expected: number, actual: version.number)
            }
            if promote {
                try registry.promote(version.reference, reason: .gate, actor: ShortIdentifier("pipeline")!)
                if let model { ActiveAdapterExport.publish(lineage: lineage.value, active: data, model: model, state: environment.state, log: environment.log) }
            }
        }
        environment.log("candidate \(lineage)/v\(number): \(promote ? "promoted" : "kept inactive") (\(reason))")
        return .completed(StepOutput(
            result: ["outcome": .string(outcome), "promoted": .bool(promote), "reason": .string(reason),
                     "adapter_blob": .string(blob.hex)],
            inputs: ["active_adapter": .string(activeBefore?.adapterDigest.hex ?? "base")],
            registry: [
                "version": .string("v\(number)"),
                "active_before": activeBefore.map { .string($0.name) } ?? .null,
                "active_after": promote ? .string("v\(number)") : (activeBefore.map { .string($0.name) } ?? .null),
            ],
            finalize: finalize))
    }

    static func metadata(_ context: StepContext, train: JSONValue, sample: JSONValue) throws -> AdapterMetadata {
        // The promote job's input holds no training parameters; the run's resolved pipeline does.
        guard let definition = context.manifest["definition"]?["train"] else {
            throw StepError.notAPipelineRun(run: "this run", field: "definition.train")
        }
        let parameters = try PlannedInput.parameters(TrainParameters.self, from: definition)
        let common = try PlannedInput(context.input)
        let base = Digest(hex: try context.manifestString("base_model", "digest"))
        return AdapterMetadata(
            baseModel: base, chatConvention: train["chat_convention"]?.stringValue.flatMap(ShortIdentifier.init),
            trainingExamples: train["training_examples"]?.intValue ?? 0,
            heldOutExamples: sample["held_out_examples"]?.intValue ?? 0,
            trainingTokens: train["training_tokens"]?.intValue ?? 0,
            dataset: sample["train_snapshot"]?.stringValue.flatMap(Digest.init(hex:)),
            training: TrainingSummary(
                rank: parameters.rank, loraAlpha: parameters.alpha, learningRate: parameters.learningRate,
                steps: train["steps"]?.intValue ?? parameters.steps, batchSize: parameters.batchSize, seed: common.seed,
                blasThreads: parameters.blasThreads,
                targetModules: parameters.targets.compactMap { ShortIdentifier($0.rawValue) },
                config: train["config_digest"]?.stringValue.flatMap(Digest.init(hex:))))
    }

    static func metrics(train: JSONValue, eval: JSONValue) throws -> VersionMetrics {
        var gate: GateSummary?
        if let report = eval["gate"] {
            var summary = try JSON.decode(GateSummary.self, from: JSON.canonical(report), context: "the eval step's gate report")
            summary.examples = eval["examples_digest"]?.stringValue.flatMap(Digest.init(hex:))
            gate = summary
        }
        return VersionMetrics(finalTrainLoss: train["losses"]?.arrayValue?.last?.doubleValue,
                              heldOutMeanNLL: eval["candidate_mean_nll"]?.doubleValue,
                              baselineHeldOutMeanNLL: eval["incumbent_mean_nll"]?.doubleValue, gate: gate)
    }
}
