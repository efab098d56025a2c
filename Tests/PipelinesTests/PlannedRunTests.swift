import AdaptCore
import Foundation
import Pipelines
import Testing

let night = Night(year: 2026, month: 11, day: 30)!

@Test func uniqueKeyIsLineageAndNight() throws {
    let run = try plan(pipeline: .nightly, lineage: "mail", night: night, seed: 7)
    #expect(run.uniqueKey == "mail/2026-11-30")
    #expect(run.name == "nightly")
    #expect(try plan(pipeline: .nightly, lineage: "mail", night: night.advanced(by: 1), seed: 7).uniqueKey == "mail/2026-12-01")
}

@Test func samePlanInputsGiveTheSameManifestDigest() throws {
    let a = try plan(pipeline: .nightly, lineage: "mail", night: night, seed: 7)
    let b = try plan(pipeline: Pipeline.parse(Data("{}".utf8), source: "x"), lineage: "mail", night: night, seed: 7)
    #expect(a == b)
    #expect(a.manifestDigest == b.manifestDigest)
    #expect(try plan(pipeline: .nightly, lineage: "mail", night: night, seed: 8).manifestDigest != a.manifestDigest)
    #expect(try plan(pipeline: .nightly, lineage: "notes", night: night, seed: 7).manifestDigest != a.manifestDigest)
    var other = Pipeline.nightly
    other.train.rank = 4
    #expect(try plan(pipeline: other, lineage: "mail", night: night, seed: 7).manifestDigest != a.manifestDigest)
}

@Test func manifestRecordsPipelineDigestSeedAndThreads() throws {
    let run = try plan(pipeline: .nightly, lineage: "mail", night: night, seed: 7)
    #expect(run.manifest["pipeline_digest"] == .string(Pipeline.nightly.digest.hex))
    #expect(run.manifest["seed"] == .int(7))
    #expect(run.manifest["blas_threads"] == .string("auto"))
    #expect(run.manifest["lineage"] == .string("mail"))
    #expect(run.manifest["night"] == .string("2026-11-30"))
    #expect(run.manifest["definition"] == Pipeline.nightly.definition)
    // The recorded definition is enough to rebuild the pipeline: replay depends on it.
    let rebuilt = try Pipeline(json: run.manifest["definition"]!)
    #expect(rebuilt.digest == Pipeline.nightly.digest)
}

@Test func eachStepGetsExactlyItsParametersPlusLineageSeedAndNight() throws {
    let run = try plan(pipeline: .nightly, lineage: "mail", night: night, seed: 7)
    #expect(run.steps.map(\.kind) == ["prune", "sample", "train", "eval", "promote"])
    func keys(_ kind: String) -> Set<String> { Set(run.steps.first { $0.kind == kind }?.input.objectValue?.keys ?? [:].keys) }
    let common: Set<String> = ["lineage", "night", "seed"]
    #expect(keys("prune") == common.union(["ttl_days"]))
    #expect(keys("sample") == common.union(["sample_size", "held_out_fraction", "max_uses_per_example", "max_tokens_per_night",
                                            "train_init", "sample_order"]))
    #expect(keys("train") == common.union(["steps", "rank", "alpha", "dropout", "targets", "learning_rate", "schedule",
                                           "warmup_steps", "batch_size", "grad_accumulation", "max_length",
                                           "checkpoint_interval", "early_stopping", "blas_threads", "base_weights", "forward_products", "device",
                                           "prompt_markers", "init", "weight_decay_toward"]))
    // Warm starts by default: the sample step fixes the active version as the weights parent.
    #expect(run.steps[1].input["train_init"] == .string("active") && run.steps[2].input["init"] == .string("active"))
    // Its weight decay pulls toward the weights parent, not toward zero.
    #expect(run.steps[2].input["weight_decay_toward"] == .string("parent"))
    // And the examples no night trained on are drawn before rehearsal.
    #expect(run.steps[1].input["sample_order"] == .string("new_first"))
    #expect(keys("eval") == common.union(["alpha", "min_pairs", "alternative", "zero_method", "on_worse", "min_effect", "canary", "blame_fallback",
                                          "max_length", "blas_threads",
                                          "base_weights", "forward_products", "prompt_markers"]))
    #expect(keys("promote") == common)
    let train = run.steps[2]
    #expect(train.input["rank"] == .int(8))
    #expect(train.input["learning_rate"]?.doubleValue == TrainingDefaults.learningRate)
    #expect(train.input["device"]?["min_battery_percent"] == .int(30))
    #expect(train.input["seed"] == .int(7) && train.input["night"] == .string("2026-11-30"))
    #expect(train.maxAttempts == 5 && train.leaseSeconds == 120 && train.dependsOn == ["sample"])
}

@Test func stepsAreListedAfterTheirDependencies() throws {
    let json = #"""
    {"steps": [{"name": "promote", "kind": "promote", "depends_on": ["eval"]},
               {"name": "eval", "kind": "eval", "depends_on": ["train"]},
               {"name": "train", "kind": "train", "depends_on": ["sample"]},
               {"name": "sample", "kind": "sample"}]}
    """#
    let run = try plan(pipeline: Pipeline.parse(Data(json.utf8), source: "r"), lineage: "mail", night: night, seed: 1)
    #expect(run.steps.map(\.name) == ["sample", "train", "eval", "promote"])
}

@Test func seedComesFromTheCallerThenTheFileThenLineageAndNight() throws {
    var fixed = Pipeline.nightly
    fixed.seed = 99
    #expect(try plan(pipeline: fixed, lineage: "mail", night: night, seed: 5).manifest["seed"] == .int(5))
    #expect(try plan(pipeline: fixed, lineage: "mail", night: night).manifest["seed"] == .int(99))
    let derived = try plan(pipeline: .nightly, lineage: "mail", night: night)
    #expect(derived.manifest["seed"] == .int(Int(PlannedRun.derivedSeed(lineage: "mail", night: night))))
    #expect(try plan(pipeline: .nightly, lineage: "mail", night: night) == derived)
    #expect(PlannedRun.derivedSeed(lineage: "mail", night: night) != PlannedRun.derivedSeed(lineage: "mail", night: night.advanced(by: 1)))
    #expect(PlannedRun.derivedSeed(lineage: "mail", night: night) <= Pipeline.maximumSeed)
}

@Test func planRefusesUnsafeLineagesAndHugeSeeds() {
    #expect(throws: PipelineError.invalidLineage("../etc")) { try plan(pipeline: .nightly, lineage: "../etc", night: night) }
    #expect(throws: PipelineError.invalidLineage("")) { try plan(pipeline: .nightly, lineage: "", night: night) }
    #expect(throws: PipelineError.seedOutOfRange(UInt64.max)) {
        try plan(pipeline: .nightly, lineage: "mail", night: night, seed: .max)
    }
}

@Test func nightsParseAndCountAcrossMonthsAndLeapYears() throws {
    #expect(try Night(parsing: "2026-11-30") == night)
    #expect(Night(year: 2028, month: 2, day: 28)!.advanced(by: 1).description == "2028-02-29")
    #expect(Night(year: 2026, month: 12, day: 31)!.advanced(by: 1).description == "2027-01-01")
    #expect(Night(year: 2027, month: 3, day: 1)!.advanced(by: -1).description == "2027-02-28")
    #expect(night.advanced(by: 400).advanced(by: -400) == night)
    let utcMidnight = Date(timeIntervalSince1970: 1_796_083_200)  // 2026-12-01T00:00:00Z
    #expect(Night(date: utcMidnight, timeZone: TimeZone(identifier: "UTC")!).description == "2026-12-01")
    #expect(Night(date: utcMidnight, timeZone: TimeZone(identifier: "America/New_York")!).description == "2026-11-30")
}

@Test(arguments: ["2026-02-30", "2026-13-01", "26-11-30", "2026-1-30", "tomorrow", ""])
func nightsThatAreNotCalendarDatesAreRefused(_ bad: String) {
    #expect(throws: PipelineError.invalidNight(bad)) { try Night(parsing: bad) }
}

@Test func stepBodiesReadTheirParametersBackFromTheirInput() throws {
    var pipeline = Pipeline.nightly
    pipeline.train.earlyStopping = nil
    pipeline.train.rank = 12
    pipeline.sample.heldOutFraction = 0.3
    let run = try plan(pipeline: pipeline, lineage: "mail", night: night, seed: 11)
    func input(_ kind: String) -> JSONValue { run.steps.first { $0.kind == kind }!.input }
    #expect(try PlannedInput(input("promote")) == PlannedInput(lineage: "mail", night: night, seed: 11))
    #expect(try PlannedInput.parameters(PruneParameters.self, from: input("prune")) == pipeline.prune)
    #expect(try PlannedInput.parameters(SampleParameters.self, from: input("sample")) == pipeline.sample)
    #expect(try PlannedInput.parameters(PrivacyBudget.self, from: input("sample")) == pipeline.privacy)
    #expect(try PlannedInput.parameters(TrainParameters.self, from: input("train")) == pipeline.train)
    #expect(try PlannedInput.parameters(DevicePolicy.self, from: input("train")["device"]!) == pipeline.device)
    #expect(try PlannedInput.parameters(EvalParameters.self, from: input("eval")) == pipeline.eval)
    #expect(throws: (any Error).self) { try PlannedInput.parameters(TrainParameters.self, from: input("eval")) }
}

@Test func aTrainInputWithoutItsDecayRuleDecaysTowardZeroAndAnUnknownRuleIsRefused() throws {
    var input = try #require(plan(pipeline: .nightly, lineage: "mail", night: night, seed: 7).steps[2].input.objectValue)
    #expect(LaterRule.weightDecayTowardParent.holds(for: .object(input)))
    input["weight_decay_toward"] = nil
    #expect(StepInputCheck.problems(.object(input), kind: .train).isEmpty && !LaterRule.weightDecayTowardParent.holds(for: .object(input)))
    input["weight_decay_toward"] = .string("zero")
    #expect(StepInputCheck.problems(.object(input), kind: .train).map(\.path) == ["weight_decay_toward"])
}

@Test func aSampleInputWithoutItsOrderIsValidAndAnUnknownOrderIsNot() throws {
    var input = try #require(plan(pipeline: .nightly, lineage: "mail", night: night, seed: 7).steps[1].input.objectValue)
    input["sample_order"] = nil
    #expect(StepInputCheck.problems(.object(input), kind: .sample).isEmpty)
    input["sample_order"] = .string("newest")
    #expect(StepInputCheck.problems(.object(input), kind: .sample).map(\.path) == ["sample_order"])
}

@Test func trainInitIsReadCheckedAndAbsentInputsMeanFromZero() throws {
    let fresh = try Pipeline(json: JSON.decode(JSONValue.self, from: Data(#"{"train": {"init": "fresh"}}"#.utf8), context: "pipeline"))
    #expect(fresh.train.initFrom == .fresh)
    #expect(try plan(pipeline: fresh, lineage: "mail", night: night, seed: 7).steps[1].input["train_init"] == .string("fresh"))
    #expect(throws: PipelineError.self) {
        try Pipeline(json: JSON.decode(JSONValue.self, from: Data(#"{"train": {"init": "parent"}}"#.utf8), context: "pipeline"))
    }
    // A train input planned before the field reads as from zero.
    var input = try #require(plan(pipeline: .nightly, lineage: "mail", night: night, seed: 7).steps[2].input.objectValue)
    input["init"] = nil
    #expect(try PlannedInput.parameters(TrainParameters.self, from: .object(input)).initialWeights == .fresh)
    #expect(StepInputCheck.problems(.object(input), kind: .train).isEmpty)
    input["init"] = .string("parent")
    #expect(!StepInputCheck.problems(.object(input), kind: .train).isEmpty)
}
