import AdaptCore
import Foundation
import Testing
import TestSupport

/// Step inputs from `adapt enqueue run` get the checks a pipeline file gets: an input no checked pipeline could
/// have planned discards the step at once (no retry) and changes nothing.
@Suite(.serialized) struct StepInputValidationTests {
    @Test(arguments: ["-1", "0", "-9223372036854775808"])
    func pruneStepWithAnImpossibleTTLIsDiscardedAndDeletesNothing(ttl: String) async throws {
        let fixture = try await PipelineFixture.make()
        let before = try await Self.exampleCount(fixture)
        #expect(before > 0)
        let run = """
            {"kind": "nightly", "steps": [{"name": "prune", "kind": "prune", "max_attempts": 3,
             "input": {"lineage": "logbook", "night": "2026-11-30", "seed": 1, "ttl_days": \(ttl)}}]}
            """
        try Data(run.utf8).write(to: fixture.directory.file("run.json"))
        try fixture.expectSuccess(await fixture.adapt(["enqueue", "run", fixture.directory.file("run.json").path]))
        try fixture.expectSuccess(await fixture.adapt(["work", "--workers", "prune", "--exit-when-idle"]))

        #expect(try await Self.exampleCount(fixture) == before)
        let jobs = try await fixture.adapt(["jobs", "--json"])
        let job = try #require(try JSON.decode(JSONValue.self, from: jobs.stdout, context: "jobs").arrayValue?.first)
        #expect(job["state"]?.stringValue == "discarded")
        #expect(job["attempt"]?.intValue == 1, "an invalid input was retried")
        let show = try await fixture.adapt(["show", try #require(job["id"]?.stringValue), "--json"])
        let error = try #require(try JSON.decode(JSONValue.self, from: show.stdout, context: "show")["error"]?.stringValue)
        #expect(error.contains("ttl_days must be a positive whole number of days, got \(ttl)"))
        #expect(error.contains("nothing was changed"))
    }

    static func exampleCount(_ fixture: PipelineFixture) async throws -> Int {
        let list = try await fixture.adapt(["data", "list", "--lineage", "logbook", "--json"])
        try fixture.expectSuccess(list)
        return try JSON.decode(JSONValue.self, from: list.stdout, context: "data list").arrayValue?.count ?? -1
    }
}
