import AdaptCore
import Foundation
import ReplayBuffer
import Testing
import TestSupport

// `adapt data forget --id` takes the id as `adapt data list` shows it (its first 12 characters) or whole; a
// prefix that matches nothing or several examples erases nothing and says why.

@Test(arguments: Backend.allCases)
func forgetAcceptsTheShortIdThatDataListPrints(backend: Backend) throws {
    let adapt = try AdaptData(backend)
    let file = try adapt.write("x.jsonl", "{\"text\": \"a\"}\n{\"text\": \"b\"}\n")
    #expect(try adapt.run(["data", "import", file, "--lineage", "mail"]).status == 0)
    let table = try adapt.run(["data", "list"]).stdout.split(separator: "\n")
    let shortID = try #require(table.dropFirst().first?.split(separator: " ").first.map(String.init))
    #expect(shortID.count == 12)

    let forgot = try adapt.run(["data", "forget", "--id", shortID])
    #expect(forgot.status == 0 && forgot.stdout == "forgot 1 example\n", "\(forgot.stderr)")
    let left = try #require(try adapt.json(["data", "list"]).arrayValue)
    #expect(left.count == 1 && left.first?["id"]?.stringValue?.hasPrefix(shortID) == false)
}


@Test func forgetWithAnIdThatMatchesNothingSaysSoAndExitsOne() throws {
    let adapt = AdaptData()
    let file = try adapt.write("x.jsonl", "{\"text\": \"a\"}\n")
    #expect(try adapt.run(["data", "import", file, "--lineage", "mail"]).status == 0)
    let id = try #require(try adapt.json(["data", "list"]).arrayValue?.first?["id"]?.stringValue)
    let other = id.hasPrefix("f") ? "0" + id.dropFirst() : "f" + id.dropFirst()
    let result = try adapt.run(["data", "forget", "--id", String(other.prefix(12)), "--id", id])
    #expect(result.status == 1)
    #expect(result.stderr.contains("no stored example has an id starting with"), "\(result.stderr)")
    #expect(try adapt.json(["data", "list"]).arrayValue?.count == 1, "a later valid id was erased anyway")
    // Text that cannot start an id is a usage error.
    #expect(try adapt.run(["data", "forget", "--id", "a"]).status == 2)
    #expect(try adapt.run(["data", "forget", "--id", "not-hex-at-all"]).status == 2)
}

@Test(arguments: Backend.allCases)
func anAmbiguousIdPrefixIsRefusedWithTheCount(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    try fixture.importLines(3)
    // Give every id the same first 8 characters (no uses refer to them yet).
    try fixture.store.database.execute("UPDATE replay_examples SET id = 'abcdef01' || substr(id, 9)")
    #expect(throws: ReplayError.ambiguousExampleID("abcdef01", matches: 3)) {
        try fixture.store.exampleID(matching: "abcdef01")
    }
    #expect(ReplayError.ambiguousExampleID("abcdef01", matches: 3).description.hasPrefix("3 examples have ids starting with abcdef01"))
    let one = try #require(try fixture.store.examples().first?.id)
    #expect(try fixture.store.exampleID(matching: one.uppercased()) == one)
    #expect(try fixture.store.exampleID(matching: one) == one)
    #expect(try fixture.store.examples().count == 3)
}
