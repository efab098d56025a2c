import AdaptCore
import Foundation
import Pipelines
import Testing

/// `eval.min_effect` and `eval.canary` (issue 42): defaults, checks, and eval inputs planned before them.

@Test func minEffectAndCanaryHaveDefaultsAndAreChecked() throws {
    #expect(Pipeline.nightly.eval.minEffect == EvalParameters.defaultMinEffect)
    #expect(Pipeline.nightly.eval.canary == CanaryGuard(delta: 2, alpha: 0.05, fluencyDelta: 1),
            "on by default: see docs/gate-and-registry.md for the measurements")
    let on = try Pipeline.parse(Data(#"{"eval": {"canary": {}}}"#.utf8), source: "test.json")
    #expect(on.eval.canary == CanaryGuard(delta: 2, alpha: 0.05, fluencyDelta: 1))
    #expect(on.digest == Pipeline.nightly.digest)
    let tuned = try Pipeline.parse(Data(#"{"eval": {"canary": {"delta": 1.5, "fluency_delta": 0.5}}}"#.utf8), source: "test.json")
    #expect(tuned.eval.canary == CanaryGuard(delta: 1.5, alpha: 0.05, fluencyDelta: 0.5))
    #expect(problems(#"{"eval": {"canary": {"fluency_delta": -1}}}"#)
            == ["eval.canary.fluency_delta must be a number of nats per token of at least 0 and at most 100, got -1"])
    #expect(problems(#"{"eval": {"min_effect": 0, "canary": {"delta": 0.5}}}"#) == [])
    #expect(problems(#"{"eval": {"min_effect": -0.1}}"#)
            == ["eval.min_effect must be a number of nats of at least 0 and at most 10 (0: no minimum), got -0.1"])
    #expect(problems(#"{"eval": {"canary": {"alpha": 0.9}}}"#) == ["eval.canary.alpha must be a number above 0 and at most 0.5, got 0.9"])
    #expect(problems(#"{"eval": {"canary": {"delt": 1}}}"#) == ["eval.canary.delt is not a known field; did you mean eval.canary.delta?"])
    #expect(problems(#"{"eval": {"canary": true}}"#)
            == ["eval.canary must be an object {delta, alpha, fluency_delta, fluency_reference} or null (no forgetting guard), got true"])
    #expect(try Pipeline.parse(Data(#"{"eval": {"canary": {"fluency_reference": "base"}}}"#.utf8), source: "test.json").eval.canary?
                .fluencyReference == .base)
    #expect(problems(#"{"eval": {"canary": {"fluency_reference": "parent"}}}"#).count == 1)
}

@Test func aNullCanarySwitchesTheGuardOffAndIsWrittenIntoTheEvalInput() throws {
    let off = try Pipeline.parse(Data(#"{"eval": {"canary": null}}"#.utf8), source: "test.json")
    #expect(off.eval.canary == nil && off.digest != Pipeline.nightly.digest)
    let run = try plan(pipeline: off, lineage: "mail", night: Night(parsing: "2026-11-30"))
    let eval = try #require(run.steps.first { $0.kind == "eval" }?.input)
    // Present and null: switched off, unlike an input planned before the guard, which has no key.
    #expect(eval["canary"] == .null)
    #expect(eval["min_effect"]?.doubleValue == EvalParameters.defaultMinEffect)
    let shown = off.jsonValue["eval"]?["canary"]
    #expect(shown == .null)
}

@Test func anEvalInputPlannedBeforeMinEffectAndCanaryPassesAndDecodesWithoutThem() throws {
    let on = try Pipeline.parse(Data(#"{"eval": {"canary": {"delta": 1}}}"#.utf8), source: "test.json")
    let run = try plan(pipeline: on, lineage: "mail", night: Night(parsing: "2026-11-30"))
    var input = try #require(run.steps.first { $0.kind == "eval" }?.input.objectValue)
    #expect(input["canary"]?["delta"]?.doubleValue == 1)
    (input["min_effect"], input["canary"]) = (nil, nil)
    #expect(StepInputCheck.problems(.object(input), kind: .eval).isEmpty)
    let parameters = try PlannedInput.parameters(EvalParameters.self, from: .object(input))
    #expect(parameters.minEffect == nil && parameters.canary == nil, "no minimum and no guard, as before the fields existed")
    input["canary"] = .object(["delta": .int(-1), "alpha": .double(0.05)])
    #expect(StepInputCheck.problems(.object(input), kind: .eval).map(\.message)
            == ["canary.delta must be a number of nats of at least 0 and at most 100, got -1"])
}

@Test func theNightlyEvalInputCarriesTheFluencyDelta() throws {
    let run = try plan(pipeline: Pipeline.nightly, lineage: "mail", night: Night(parsing: "2026-11-30"))
    let eval = try #require(run.steps.first { $0.kind == "eval" }?.input)
    let canary = try #require(eval["canary"]?.objectValue)
    #expect(canary.keys.sorted() == ["alpha", "delta", "fluency_delta", "fluency_reference"])
    #expect(canary["fluency_reference"] == .string("incumbent"))
    #expect(canary["delta"]?.doubleValue == 2 && canary["alpha"]?.doubleValue == 0.05 && canary["fluency_delta"]?.doubleValue == 1)
}

@Test func anEvalInputPlannedBeforeTheFluencyPartRunsTheMarginAlone() throws {
    let run = try plan(pipeline: Pipeline.nightly, lineage: "mail", night: Night(parsing: "2026-11-30"))
    var input = try #require(run.steps.first { $0.kind == "eval" }?.input.objectValue)
    // The shape such a step recorded: `{delta, alpha}` with the δ of then.
    input["canary"] = .object(["delta": .int(1), "alpha": .double(0.05)])
    #expect(StepInputCheck.problems(.object(input), kind: .eval).isEmpty)
    let parameters = try PlannedInput.parameters(EvalParameters.self, from: .object(input))
    #expect(parameters.canary == CanaryGuard(delta: 1, alpha: 0.05, fluencyDelta: nil, fluencyReference: nil))
    input["canary"] = .object(["delta": .int(1), "alpha": .double(0.05), "fluency_delta": .string("one")])
    #expect(StepInputCheck.problems(.object(input), kind: .eval).map(\.message)
            == ["canary.fluency_delta must be a number of nats per token of at least 0 and at most 100, got \"one\""])
}

@Test func anEvalInputPlannedBeforeTheFluencyReferenceMeasuresFluencyAgainstTheBase() throws {
    let run = try plan(pipeline: Pipeline.nightly, lineage: "mail", night: Night(parsing: "2026-11-30"))
    var input = try #require(run.steps.first { $0.kind == "eval" }?.input.objectValue)
    input["canary"] = .object(["delta": .int(2), "alpha": .double(0.05), "fluency_delta": .int(1)])
    #expect(StepInputCheck.problems(.object(input), kind: .eval).isEmpty)
    let parameters = try PlannedInput.parameters(EvalParameters.self, from: .object(input))
    #expect(parameters.canary == CanaryGuard(delta: 2, alpha: 0.05, fluencyDelta: 1, fluencyReference: nil))
    input["canary"] = .object(["delta": .int(2), "alpha": .double(0.05), "fluency_delta": .int(1), "fluency_reference": .string("night")])
    #expect(StepInputCheck.problems(.object(input), kind: .eval).count == 1)
}
