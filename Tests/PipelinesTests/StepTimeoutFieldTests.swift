import AdaptCore
import Foundation
import Pipelines
import Testing

/// A step's `timeout_seconds`: how long one attempt may run before it is failed as timed out and retried. The
/// bundled nightly pipeline sets one per step; a step a file lists without it has none, and its pipeline keeps the
/// digest (and the runs planned from it replay) as before the field existed.

@Test func theNightlyPipelineBoundsEachStepFarAboveItsExpectedTime() throws {
    #expect(Pipeline.nightly.steps.map(\.timeoutSeconds) == [600, 600, 10_800, 3_600, 600])
    let file = try Pipeline.load(contentsOf: repositoryRoot.appendingPathComponent("pipelines/nightly.json"))
    #expect(file.steps.map(\.timeoutSeconds) == Pipeline.nightly.steps.map(\.timeoutSeconds))
}

@Test func aStepListedWithoutTimeoutSecondsHasNoneAndItsDefinitionDoesNotNameOne() throws {
    let json = #"{"steps": [{"name": "s", "kind": "sample"}, {"name": "t", "kind": "train", "depends_on": ["s"], "timeout_seconds": null}]}"#
    let pipeline = try Pipeline.parse(Data(json.utf8), source: "two.json")
    #expect(pipeline.steps.map(\.timeoutSeconds) == [nil, nil])
    for step in pipeline.definition["steps"]?.arrayValue ?? [] {
        #expect(step.objectValue?.keys.contains("timeout_seconds") == false, "\(step)")
    }
    let planned = try plan(pipeline: pipeline, lineage: "mail", night: try #require(Night(year: 2026, month: 12, day: 1)))
    #expect(planned.steps.map(\.timeoutSeconds) == [nil, nil])
    let encoded = try JSONDecoder().decode(JSONValue.self, from: JSON.canonical(planned))
    #expect(encoded["steps"]?.arrayValue?.first?["timeout_seconds"] == nil)
}

@Test func aStepsTimeoutSecondsIsPlannedWithIt() throws {
    let json = #"{"steps": [{"name": "s", "kind": "sample", "timeout_seconds": 7200}, {"name": "t", "kind": "train", "depends_on": ["s"]}]}"#
    let pipeline = try Pipeline.parse(Data(json.utf8), source: "two.json")
    #expect(pipeline.steps.map(\.timeoutSeconds) == [7_200, nil])
    #expect(pipeline.definition["steps"]?.arrayValue?.first?["timeout_seconds"] == .int(7_200))
    let planned = try plan(pipeline: pipeline, lineage: "mail", night: try #require(Night(year: 2026, month: 12, day: 1)))
    #expect(planned.steps.map(\.timeoutSeconds) == [7_200, nil])
}

@Test func aTimeoutOutsideASecondToAWeekIsNamedByItsPath() {
    let requirement = "a number of seconds from 1 to 604800 (a week), or null for no timeout"
    for bad in ["0", "-5", "1.5", #""2h""#] {
        #expect(problems(#"{"steps": [{"name": "s", "kind": "sample", "timeout_seconds": \#(bad)}]}"#)
                == ["steps[0].timeout_seconds must be \(requirement), got \(bad)"])
    }
    #expect(problems(#"{"steps": [{"name": "s", "kind": "sample", "timeout_seconds": 604801}]}"#)
            == ["steps[0].timeout_seconds must be at most 604800, got 604801"])
}
