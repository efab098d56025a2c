import AdaptCore
import Foundation
import Pipelines
import Testing

@Test func chatFormatTakesAConventionNameOrNullAndSuggestsANearMiss() throws {
    #expect(problems(#"{"train": {"chat_format": "plain"}}"#) == [])
    #expect(problems(#"{"train": {"chat_format": null}}"#) == [])
    #expect(problems(#"{"train": {"chat_format": "plian"}}"#)
            == [#"train.chat_format must be one of chatml, llama3, gemma, phi3, plain, got "plian"; did you mean plain?"#])
    #expect(problems(#"{"train": {"chat_format": 1}}"#).count == 1)
    let parsed = try Pipeline.parse(Data(#"{"train": {"chat_format": "plain"}}"#.utf8), source: "test.json")
    #expect(parsed.train.chatFormat == .plain)
    #expect(Pipeline.nightly.train.chatFormat == nil)
}

@Test func aPipelineWithoutAChatFormatKeepsTheDigestAndStepInputsItHadBeforeTheField() throws {
    // Absent and null resolve to the model's template and are not written: existing pipelines, their runs'
    // manifests and step inputs are byte for byte what they were, so recorded runs replay equal.
    let null = try Pipeline.parse(Data(#"{"train": {"chat_format": null}}"#.utf8), source: "test.json")
    #expect(null.digest == Pipeline.nightly.digest)
    #expect(Pipeline.nightly.definition["train"]?["chat_format"] == nil)
    let run = try plan(pipeline: .nightly, lineage: "mail", night: Night(parsing: "2026-11-30"), seed: 7)
    #expect(run.steps.allSatisfy { $0.input["chat_format"] == nil })

    let plain = try Pipeline.parse(Data(#"{"train": {"chat_format": "plain"}}"#.utf8), source: "test.json")
    #expect(plain.digest != Pipeline.nightly.digest)
    let planned = try plan(pipeline: plain, lineage: "mail", night: Night(parsing: "2026-11-30"), seed: 7)
    #expect(planned.manifest["definition"]?["train"]?["chat_format"] == .string("plain"))
    // Train formats the examples in it, eval scores them in it; nothing else reads it.
    for step in planned.steps {
        #expect(step.input["chat_format"] == (["train", "eval"].contains(step.kind) ? .string("plain") : nil), "\(step.kind)")
        #expect(StepInputCheck.problems(step.input, kind: StepKind(rawValue: step.kind)!).isEmpty, "\(step.kind)")
    }
    var bad = try #require(planned.steps.first { $0.kind == "eval" }?.input.objectValue)
    bad["chat_format"] = .string("jinja")
    #expect(StepInputCheck.problems(.object(bad), kind: .eval).map(\.message)
            == [#"chat_format must be one of chatml, llama3, gemma, phi3, plain, got "jinja""#])
}
