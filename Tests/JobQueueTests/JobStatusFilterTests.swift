import AdaptCore
import Foundation
import Testing
import TestSupport

/// `adapt jobs --status S` filters by job state; the old `--state S` still works, with a note on stderr, since
/// `--state` before the command names the state directory.
struct JobStatusFilterTests {
    let directory = TemporaryDirectory("adapt-status")

    func adapt(_ arguments: [String]) throws -> ProcessResult {
        try Executables.run("adapt", ["--state", directory.file("state").path] + arguments)
    }

    func ids(_ result: ProcessResult) throws -> [String] {
        try JSON.decode(JSONValue.self, from: result.stdout, context: "jobs").arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
    }

    @Test func statusFiltersByJobStateAndTheOldSpellingStillWorksWithANote() throws {
        #expect(try adapt(["enqueue", "noop", "--count", "3"]).status == 0)
        #expect(try adapt(["worker", "--kinds", "noop", "--exit-when-idle"]).status == 0)
        #expect(try adapt(["enqueue", "noop", "--count", "2"]).status == 0)

        let ready = try adapt(["jobs", "--status", "ready", "--json"])
        #expect(ready.status == 0 && !ready.stderr.contains("note"))
        #expect(try ids(ready) == ["job-4", "job-5"])
        let succeeded = try adapt(["jobs", "--status", "succeeded", "--json"])
        #expect(try ids(succeeded) == ["job-1", "job-2", "job-3"])

        let old = try adapt(["jobs", "--state", "ready", "--json"])
        #expect(old.status == 0)
        #expect(try ids(old) == ["job-4", "job-5"])
        #expect(old.stderr.contains("'adapt jobs --state S' is now 'adapt jobs --status S'"))
    }

    @Test func aBadStatusOrBothSpellingsAreUsageErrors() throws {
        #expect(try adapt(["enqueue", "noop"]).status == 0)
        let bad = try adapt(["jobs", "--status", "sleeping"])
        #expect(bad.status == 2 && bad.stderr.contains("--status") && bad.stderr.contains("sleeping"))
        #expect(try adapt(["jobs", "--state", "sleeping"]).status == 2)
        #expect(try adapt(["jobs", "--status", "ready", "--state", "ready"]).status == 2)
    }
}
