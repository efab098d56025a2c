import AdaptCore
import Evaluation
import Foundation
@testable import Steps
import Storage
import Testing
import TestSupport

/// The typed step outputs read every output the build before them recorded, and write it back byte for byte:
/// same fields, same `--json`, same output digest, so recorded runs replay equal. What they cannot read is
/// named by its field.
@Suite struct StepOutputTests {
    static func recorded(_ index: Int) throws -> (night: Int, step: String, text: String, json: JSONValue) {
        let (night, step, text) = RecordedOutputs.all[index]
        return (night, step, text, try JSON.decode(JSONValue.self, from: text, context: "recorded output"))
    }

    /// The job output `typed` makes (`StepRecord.jobOutput`'s layout: result fields, `inputs`) with the rest of the
    /// bookkeeping (`input`, `digests`, `timing`, `registry`) taken from `recorded`.
    static func rewritten(_ typed: some StepResult, bookkeepingOf recorded: JSONValue) -> String {
        let output = StepOutput(typed)
        var fields = output.result
        fields["inputs"] = .object(output.inputs)
        for key in ["input", "digests", "timing", "registry"] { fields[key] = recorded[key] }
        return JSON.canonicalString(JSONValue.object(fields))
    }

    static func typed(_ step: String, _ output: JSONValue) throws -> any StepResult {
        switch step {
        case "prune": return try PruneOutput(jobOutput: output)
        case "sample": return try SampleOutput(jobOutput: output)
        case "train": return try TrainOutput(jobOutput: output)
        case "eval": return try EvalOutput(jobOutput: output)
        case "promote": return try PromoteOutput(jobOutput: output)
        default: throw StepError.unknownKind(step)
        }
    }

    @Test(arguments: Array(RecordedOutputs.all.indices))
    func anOutputTheEarlierBuildRecordedIsReadAndWrittenBackByteForByte(index: Int) throws {
        let recorded = try Self.recorded(index)
        let typed = try Self.typed(recorded.step, recorded.json)
        #expect(Self.rewritten(typed, bookkeepingOf: recorded.json) == recorded.text, "night \(recorded.night) \(recorded.step)")
        // The digest replay compares, taken over the typed output's result and inputs.
        let output = StepOutput(typed)
        let digests = StepRecord.digests(result: output.result, inputs: output.inputs, input: .null, ancestors: [:])
        #expect(digests["output"] == recorded.json["digests"]?["output"], "night \(recorded.night) \(recorded.step)")
    }

    @Test func theNextStepsReadTheVerdictsAndAdaptersAsTypes() throws {
        func output<T: StepResult>(_ type: T.Type, night: Int) throws -> T {
            let index = try #require(RecordedOutputs.all.firstIndex { $0.night == night && $0.step == T.kind.rawValue })
            return try T(jobOutput: try Self.recorded(index).json)
        }
        // Night 1: better than the base model, promoted.
        let train1 = try output(TrainOutput.self, night: 1)
        let eval1 = try output(EvalOutput.self, night: 1)
        let promote1 = try output(PromoteOutput.self, night: 1)
        #expect(train1.adapterDigest == train1.adapterBlob && train1.steps == 16 && train1.losses.count == 16 && train1.bestStep == nil)
        #expect(try output(SampleOutput.self, night: 1).trainSnapshot == train1.inputs.trainSnapshot)
        #expect(eval1.outcome == .better && eval1.gate.report.outcome == .better && eval1.gate.includesMorePairsNeeded)
        #expect(eval1.incumbent == nil && eval1.inputs.incumbentAdapter == .base && eval1.inputs.candidateAdapter == train1.adapterBlob)
        #expect(eval1.worse == EvalOutput.WorseHandling(onWorse: .quarantine, attribution: nil, quarantinedSources: []))
        #expect(promote1.promoted && promote1.reason == "gate_better" && promote1.adapterBlob == train1.adapterBlob)
        #expect(promote1.inputs.activeAdapter == .base)
        // Night 2: worse than v1, kept inactive; the junk source is blamed and quarantined.
        let eval2 = try output(EvalOutput.self, night: 2)
        let promote2 = try output(PromoteOutput.self, night: 2)
        #expect(eval2.outcome == .worse && eval2.incumbent?.version == "logbook/v1" && eval2.incumbent?.adapterBlob == train1.adapterBlob)
        #expect(eval2.inputs.incumbentAdapter == .adapter(train1.adapterBlob))
        #expect(eval2.worse?.attribution?.blamed == ["junk"] && eval2.worse?.quarantinedSources == ["junk"])
        #expect(eval2.worse?.attribution?.since != nil)
        #expect(!promote2.promoted && promote2.reason == "gate_worse" && promote2.outcome == .worse)
        #expect(promote2.inputs.activeAdapter == .adapter(train1.adapterBlob))
        #expect(try output(PruneOutput.self, night: 2).now > (try output(PruneOutput.self, night: 1).now))
    }

    @Test func anEvalOutputOfARunPlannedBeforeOnWorseAndTheFillFirstRuleKeepsItsShape() throws {
        let index = try #require(RecordedOutputs.all.firstIndex { $0.night == 1 && $0.step == "eval" })
        guard case var .object(fields) = try Self.recorded(index).json, case var .object(gate) = fields["gate"] else {
            Issue.record("the recorded eval output is not an object with a gate report")
            return
        }
        for key in ["on_worse", "attribution", "quarantined_sources", "gate_readiness"] { fields[key] = nil }
        let morePairsNeeded = try #require(gate.removeValue(forKey: "more_pairs_needed")?.intValue)
        fields["gate"] = .object(gate)
        let old = JSONValue.object(fields)

        let eval = try EvalOutput(jobOutput: old)
        #expect(eval.worse == nil && eval.gateReadiness == nil && !eval.gate.includesMorePairsNeeded)
        #expect(eval.gate.report.morePairsNeeded == morePairsNeeded)
        #expect(Self.rewritten(eval, bookkeepingOf: old) == JSON.canonicalString(old))
    }

    /// The recorded outputs come from runs planned before `eval.min_effect` and `eval.canary`: read back they have
    /// no minimum and no guard, and written again they keep their bytes (no `min_effect`, `canary`, `canary_margins`).
    @Test func anEvalOutputOfARunPlannedBeforeTheGateGuardsKeepsItsShape() throws {
        for index in RecordedOutputs.all.indices where RecordedOutputs.all[index].step == "eval" {
            let recorded = try Self.recorded(index).json
            let eval = try EvalOutput(jobOutput: recorded)
            #expect(!eval.gate.includesGuards && !eval.plannedWithCanary && eval.canaryMargins == nil)
            #expect(eval.gate.report.minEffect == nil && eval.gate.report.canary == nil)
            let written = Self.rewritten(eval, bookkeepingOf: recorded)
            #expect(written == JSON.canonicalString(recorded))
            #expect(!written.contains("min_effect") && !written.contains("canary"))
        }
    }

    @Test(arguments: [
        ("train", "adapter_blob", JSONValue.string("not a digest"), "adapter_blob"),
        ("train", "validation_losses", .array([.object(["step": .int(4)])]), "validation_losses[0].loss"),
        ("eval", "outcome", .string("maybe"), "outcome"),
        ("eval", "incumbent", .object(["version": .string("logbook/v1"), "adapter_blob": .int(7)]), "incumbent.adapter_blob"),
        ("prune", "inputs", .object([:]), "inputs.buffer_snapshot"),
        ("promote", "inputs", .object(["active_adapter": .string("v1")]), "inputs.active_adapter"),
        ("sample", "train_snapshot", .null, "train_snapshot"),
    ])
    func anOutputThatDoesNotFitItsTypeIsRefusedNamingTheField(step: String, key: String, value: JSONValue, field: String) throws {
        let index = try #require(RecordedOutputs.all.firstIndex { $0.night == 1 && $0.step == step })
        guard case var .object(fields) = try Self.recorded(index).json else {
            Issue.record("the recorded \(step) output is not an object")
            return
        }
        fields[key] = value
        #expect(throws: StepError.malformedOutput(step: step, field: field)) { try Self.typed(step, .object(fields)) }
    }

    @Test func aStepWhoseRunHasNoSuchEarlierStepSaysWhichItNeeds() throws {
        let directory = TemporaryDirectory()
        try directory.state.create()
        let environment = StepEnvironment(state: directory.state, database: try Database(path: directory.state.database.path))
        let context = StepContext(environment: environment, name: "promote", input: .object([:]), manifest: .object([:]), ancestors: [:])
        #expect(throws: StepError.missingAncestor(step: "promote", kind: "eval")) { try context.output(of: EvalOutput.self) }
    }
}
