import AdaptCore
import Foundation
import Pipelines
import Testing

@Test func ttlRetiresAdaptersIsABooleanOffByDefault() throws {
    #expect(Pipeline.nightly.prune.ttlRetiresAdapters == false)
    #expect(problems(#"{"prune": {"ttl_retires_adapters": true}}"#) == [])
    #expect(problems(#"{"prune": {"ttl_retires_adapters": false}}"#) == [])
    #expect(problems(#"{"prune": {"ttl_retires_adapters": "yes"}}"#)
            == [#"prune.ttl_retires_adapters must be true or false, got "yes""#])
    #expect(problems(#"{"prune": {"ttl_retires_adapters": 1}}"#).count == 1)
    let on = try Pipeline.parse(Data(#"{"prune": {"ttl_retires_adapters": true}}"#.utf8), source: "test.json")
    #expect(on.prune.ttlRetiresAdapters && on.digest != Pipeline.nightly.digest)
    // Spelled out as false, the pipeline is the default one: the same parameters and digest.
    let off = try Pipeline.parse(Data(#"{"prune": {"ttl_retires_adapters": false}}"#.utf8), source: "test.json")
    #expect(off.prune == Pipeline.nightly.prune && off.digest == Pipeline.nightly.digest)
}

@Test func onlyAPruneInputPlannedWithTheFieldOnCarriesIt() throws {
    for (text, expected) in [("{}", JSONValue?.none), (#"{"prune": {"ttl_retires_adapters": true}}"#, .bool(true))] {
        let pipeline = try Pipeline.parse(Data(text.utf8), source: "test.json")
        let run = try plan(pipeline: pipeline, lineage: "mail", night: Night(parsing: "2026-11-30"), seed: 7)
        for step in run.steps {
            #expect(step.input["ttl_retires_adapters"] == (step.kind == "prune" ? expected : nil), "\(step.kind)")
            #expect(StepInputCheck.problems(step.input, kind: StepKind(rawValue: step.kind)!).isEmpty, "\(step.kind)")
        }
        let prune = try #require(run.steps.first { $0.kind == "prune" })
        #expect(try PlannedInput.parameters(PruneParameters.self, from: prune.input).ttlRetiresAdapters == (expected != nil))
    }
}

@Test func aPruneInputWithAMalformedRetireFlagIsRefused() throws {
    let run = try plan(pipeline: .nightly, lineage: "mail", night: Night(parsing: "2026-11-30"), seed: 7)
    var input = try #require(run.steps.first { $0.kind == "prune" }?.input.objectValue)
    input["ttl_retires_adapters"] = .string("true")
    #expect(StepInputCheck.problems(.object(input), kind: .prune).map(\.message)
            == [#"ttl_retires_adapters must be true or false, got "true""#])
}
