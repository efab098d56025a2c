import AdaptCore
import Foundation
import ReplayBuffer
import Testing
import TestSupport

// A lineage is named by one rule everywhere (AdaptCore's Lineage): what `data import` and `data policy`
// accept, `enqueue nightly` and `schedule` accept too.

@Test(arguments: ["-", ".", "..", "a.b", "--json", "_x", "a/b", String(repeating: "a", count: 65)])
func dataCommandsRefuseALineageTheSchedulerWouldRefuse(name: String) throws {
    let adapt = AdaptData()
    let file = try adapt.write("x.jsonl", "{\"text\": \"a\"}\n")
    let imported = try adapt.run(["data", "import", file, "--lineage", name])
    #expect(imported.status == 2, "\(imported.stderr)")
    #expect(imported.stderr.contains("is not a valid name"), "\(imported.stderr)")
    #expect(try adapt.run(["data", "policy", "--lineage", name, "--ttl-days", "5"]).status == 2)
    #expect(try adapt.run(["data", "policy", "--lineage", name]).status == 2)
    #expect(try adapt.run(["data", "stats", "--lineage", name]).status == 2)
    #expect(try adapt.run(["data", "list", "--lineage", name]).status == 2)
    #expect(!FileManager.default.fileExists(atPath: adapt.statePath), "a refused command created a state")
}

@Test(arguments: Backend.allCases)
func lineageNamesTheSchedulerAcceptsAreAccepted(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    for name in ["mail", "Mail-2", "a_b", "9", String(repeating: "a", count: 64)] {
        #expect(throws: Never.self) { try fixture.importLines(1, lineage: name) }
    }
}


@Test func statsOfAnUnknownLineagePrintNothing() throws {
    let adapt = AdaptData()
    let file = try adapt.write("x.jsonl", "{\"text\": \"a\"}\n")
    #expect(try adapt.run(["data", "import", file, "--lineage", "mail"]).status == 0)
    #expect(try adapt.json(["data", "stats", "--lineage", "nonexistent"]) == .array([]))
    let text = try adapt.run(["data", "stats", "--lineage", "nonexistent"])
    #expect(text.status == 0 && text.stdout.isEmpty)
    #expect(text.stderr.contains("no data or policy stored for lineage nonexistent"))
    #expect(try adapt.json(["data", "stats", "--lineage", "mail"]).arrayValue?.count == 1)
}

/// Every command that takes a lineage refuses a bad one before it opens anything, as a usage error (exit 2)
/// with the same sentence: the rule and the way out.
@Test(arguments: [
    ["data", "stats", "--lineage", "a.b"],
    ["data", "list", "--lineage", "a.b"],
    ["enqueue", "nightly", "--lineage", "a.b"],
    ["schedule", "install", "--lineage", "a.b", "--at", "02:00", "--dry-run"],
    ["schedule", "remove", "--lineage", "a.b"],
    ["registry", "add", "--lineage", "a.b", "no-such-file"],
    ["eval", "voice", "--lineage", "a.b"],
])
func everyCommandRefusesABadLineageWithTheOneMessage(arguments: [String]) throws {
    let adapt = AdaptData()
    let result = try adapt.run(arguments)
    #expect(result.status == 2, "\(result.stderr)")
    #expect(result.stderr.contains("--lineage: lineage 'a.b' is not a valid name; use 1 to 64 letters, digits, '-' or '_', "
                                   + "starting with a letter or digit"), "\(result.stderr)")
    #expect(!FileManager.default.fileExists(atPath: adapt.directory.url.appendingPathComponent("state").path))
}
