import AdaptCore
import Foundation
import Pipelines
import Testing

/// The problems `Pipeline.parse` reports for `json`, as messages (empty when the pipeline is valid).
func problems(_ json: String) -> [String] {
    do {
        _ = try Pipeline.parse(Data(json.utf8), source: "test.json")
        return []
    } catch let PipelineError.invalid(_, found) {
        return found.map(\.message)
    } catch {
        return ["\(error)"]
    }
}

@Test func negativeRankIsNamedByItsPathAndValue() {
    #expect(problems(#"{"train": {"rank": -1}}"#) == ["train.rank must be a positive integer, got -1"])
}

@Test func wrongTypesAndRangesNameTheFieldAndWhatIsAccepted() {
    #expect(problems(#"{"train": {"steps": "many"}}"#) == [#"train.steps must be a positive integer, got "many""#])
    #expect(problems(#"{"train": {"rank": 2048}}"#) == ["train.rank must be at most 1024, got 2048"])
    #expect(problems(#"{"train": {"batch_size": 2.5}}"#) == ["train.batch_size must be a positive integer, got 2.5"])
    #expect(problems(#"{"train": {"dropout": 1}}"#) == ["train.dropout must be a number from 0 up to but not including 1, got 1"])
    #expect(problems(#"{"train": {"learning_rate": 0}}"#) == ["train.learning_rate must be a positive number no greater than 1, got 0"])
    #expect(problems(#"{"sample": {"held_out_fraction": 1}}"#) == ["sample.held_out_fraction must be a number strictly between 0 and 1, got 1"])
    #expect(problems(#"{"prune": {"ttl_days": 0}}"#) == ["prune.ttl_days must be a positive whole number of days, got 0"])
    #expect(problems(#"{"privacy": {"max_uses_per_example": null}}"#) == ["privacy.max_uses_per_example must be a positive integer, got null"])
    #expect(problems(#"{"eval": {"alpha": 0.7}}"#) == ["eval.alpha must be a number above 0 and at most 0.5, got 0.7"])
    #expect(problems(#"{"device": {"min_battery_percent": 101}}"#) == ["device.min_battery_percent must be at most 100, got 101"])
    #expect(problems(#"{"format": 2}"#) == ["format must be 1, the format version this program reads, got 2"])
    #expect(problems(#"{"seed": -5}"#) == ["seed must be null (a seed per night) or an integer from 0 to 9007199254740991, got -5"])
    #expect(problems(#"{"train": 5}"#) == ["train must be an object, got 5"])
    #expect(problems(#"[1, 2]"#) == ["a pipeline must be a JSON object, got an array"])
}

@Test func unknownKeysSuggestTheNearestKnownKey() {
    #expect(problems(#"{"train": {"rnak": 4}}"#) == ["train.rnak is not a known field; did you mean train.rank?"])
    #expect(problems(#"{"trian": {}}"#) == ["trian is not a known field; did you mean train?"])
    #expect(problems(#"{"train": {"early_stopping": {"patients": 2}}}"#)
            == ["train.early_stopping.patients is not a known field; did you mean train.early_stopping.patience?"])
    let far = problems(#"{"eval": {"colour": "red"}}"#)
    #expect(far == ["eval.colour is not a known field of eval; known fields: alpha, min_pairs, alternative, zero_method, on_worse, min_effect, canary"])
}

@Test func choicesListTheAllowedWordsAndSuggestANearMiss() {
    #expect(problems(#"{"train": {"schedule": "cosin"}}"#)
            == [#"train.schedule must be one of constant, linear, cosine, got "cosin"; did you mean cosine?"#])
    #expect(problems(#"{"eval": {"zero_method": "wilcoxon"}}"#)
            == [#"eval.zero_method must be one of wilcox, pratt, zsplit, got "wilcoxon"; did you mean wilcox?"#])
    #expect(problems(#"{"train": {"targets": ["q_proj"]}}"#)
            == [#"train.targets[0] must be one of attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down, got "q_proj"; did you mean attn_q?"#])
    #expect(problems(#"{"train": {"targets": []}}"#)
            == ["train.targets must list at least one of attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down"])
    #expect(problems(#"{"train": {"targets": ["attn_v", "attn_v"]}}"#)
            == [#"train.targets[1] repeats "attn_v"; list each projection once"#])
}

@Test func crossFieldRulesNameBothFields() {
    #expect(problems(#"{"train": {"steps": 20, "warmup_steps": 30}}"#)
            == ["train.warmup_steps must be at most train.steps (20), got 30"])
    #expect(problems(#"{"train": {"early_stopping": true}}"#)
            == ["train.early_stopping must be an object {every_steps, patience} or null (no early stopping), got true"])
}

@Test func unknownStepKindIsNamedWithASuggestion() {
    let json = #"{"steps": [{"name": "prune", "kind": "prnue"}]}"#
    #expect(problems(json) == [#"steps[0].kind must be one of prune, sample, train, eval, promote, got "prnue"; did you mean prune?"#])
    #expect(problems(#"{"steps": [{"name": "a"}]}"#) == ["steps[0].kind is required: one of prune, sample, train, eval, promote"])
    #expect(problems(#"{"steps": [{"kind": "prune"}]}"#) == ["steps[0].name is required: a step name of letters, digits, '-' or '_'"])
    #expect(problems(#"{"steps": [{"name": "a b", "kind": "prune"}]}"#)
            == [#"steps[0].name must be a step name of letters, digits, '-' or '_', got "a b""#])
    #expect(problems(#"{"steps": []}"#) == ["steps must list at least one step"])
}

@Test func unknownDependencyIsNamedWithTheNearestStep() {
    let json = #"{"steps": [{"name": "prune", "kind": "prune"}, {"name": "sample", "kind": "sample", "depends_on": ["prnue"]}]}"#
    #expect(problems(json) == [#"steps[1].depends_on[0] names "prnue", which is not a step of this pipeline; did you mean "prune"?"#])
}

@Test func selfDependencyAndDuplicateNamesAreReported() {
    #expect(problems(#"{"steps": [{"name": "p", "kind": "prune", "depends_on": ["p"]}]}"#)
            == ["steps[0].depends_on[0] names the step itself; a step cannot depend on itself"])
    #expect(problems(#"{"steps": [{"name": "p", "kind": "prune"}, {"name": "p", "kind": "prune"}]}"#)
            == [#"steps[1].name "p" is already the name of steps[0]; step names must be unique"#])
}

@Test func cycleIsPrintedInExecutionOrder() {
    let json = #"""
    {"steps": [{"name": "s", "kind": "sample"},
               {"name": "t", "kind": "train", "depends_on": ["s", "p"]},
               {"name": "e", "kind": "eval", "depends_on": ["t"]},
               {"name": "p", "kind": "promote", "depends_on": ["e"]}]}
    """#
    #expect(problems(json) == ["steps form a cycle: t → e → p → t; the graph must have no cycles"])
}

@Test func promoteWithoutTheGateIsRefused() {
    let json = #"{"steps": [{"name": "s", "kind": "sample"}, {"name": "t", "kind": "train", "depends_on": ["s"]}, {"name": "p", "kind": "promote", "depends_on": ["t"]}]}"#
    #expect(problems(json) == ["steps[2] (p) is a promote step and must depend, directly or through other steps, on an eval step: "
                               + "nothing is promoted without the gate"])
    #expect(problems(#"{"steps": [{"name": "t", "kind": "train"}]}"#)
            == ["steps[0] (t) is a train step and must depend, directly or through other steps, on a sample step: "
                + "it trains on the set a sample step draws"])
}

@Test func everyProblemIsListedInOnePass() {
    let json = #"{"nmae": "x", "train": {"rank": 0, "alpha": -1}, "eval": {"min_pairs": 0}, "steps": [{"name": "a", "kind": "x"}]}"#
    let found = problems(json)
    #expect(found.count == 5)
    #expect(found.contains("nmae is not a known field; did you mean name?"))
    #expect(found.contains("train.alpha must be a number above 0 and at most 1000000, got -1"))
}

@Test func malformedJSONSaysWhere() {
    #expect(throws: PipelineError.notJSON(source: "x.json", reason: "invalid value at line 2, column 7")) {
        try Pipeline.parse(Data("{\"a\": 1,\n \"b\": }".utf8), source: "x.json")
    }
}

@Test func decodingThroughCodableValidatesToo() {
    #expect(throws: DecodingError.self) { try JSONDecoder().decode(Pipeline.self, from: Data(#"{"train": {"rank": -1}}"#.utf8)) }
    #expect((try? JSONDecoder().decode(Pipeline.self, from: Data("{}".utf8)))?.digest == Pipeline.nightly.digest)
}

@Test func onWorseDefaultsToKeepAndTakesQuarantine() throws {
    #expect(problems(#"{"eval": {"on_worse": "quarantine"}}"#) == [])
    #expect(problems(#"{"eval": {"on_worse": "quarantin"}}"#)
            == [#"eval.on_worse must be one of keep, quarantine, got "quarantin"; did you mean quarantine?"#])
    #expect(Pipeline.nightly.eval.onWorse == .keep)
    let parsed = try Pipeline.parse(Data(#"{"eval": {"on_worse": "quarantine"}}"#.utf8), source: "test.json")
    #expect(parsed.eval.onWorse == .quarantine)
}
