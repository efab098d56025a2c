import AdaptCore
import Foundation
import Testing
import TestSupport

/// Imported text may hold terminal control sequences; human output shows them as escapes, `--json` exactly.
@Test func dataListEscapesControlCharactersFromImportedTextWhileJSONKeepsThemExactly() throws {
    let adapt = AdaptData()
    // ESC ] 0 ; … BEL retitles the window, ESC [ 2 J clears the screen, U+009B is the one-byte CSI, U+202E
    // reverses what follows.
    let prompt = "hi \u{1B}]0;owned\u{07}\u{1B}[2J"
    let completion = "ok \u{9B}31m \u{202E}gnp.exe"
    let line = JSON.canonicalString(JSONValue.object(["prompt": .string(prompt), "completion": .string(completion)]))
    let file = try adapt.write("evil.jsonl", line + "\n")
    #expect(try adapt.run(["data", "import", file, "--lineage", "mail"]).status == 0)

    let human = try adapt.run(["data", "list"])
    #expect(human.status == 0)
    let forbidden: [Unicode.Scalar] = ["\u{1B}", "\u{07}", "\u{9B}", "\u{202E}"]
    #expect(!human.stdout.unicodeScalars.contains { forbidden.contains($0) }, "\(human.stdout.debugDescription)")
    #expect(human.stdout.contains(#"hi \x1b]0;owned\x07\x1b[2J"#))
    #expect(human.stdout.contains(#"ok \u{9b}31m \u{202e}gnp.exe"#))

    let json = try adapt.json(["data", "list"])
    #expect(json.arrayValue?.first?["prompt"]?.stringValue == prompt)
    #expect(json.arrayValue?.first?["completion"]?.stringValue == completion)
}

/// A run name from `adapt enqueue run` reaches `runs` and `show`; an error message that echoes a name does too.
@Test func runNamesAndErrorMessagesAreEscapedForTheTerminal() throws {
    let adapt = AdaptData()
    let description = JSON.canonicalString(JSONValue.object([
        "kind": .string("noop"), "name": .string("night \u{1B}[31mred\u{1B}[0m \u{202E}x"),
        "steps": .array([.object(["name": .string("a"), "kind": .string("noop")])]),
    ]))
    let file = try adapt.write("run.json", description)
    #expect(try adapt.run(["enqueue", "run", file]).status == 0)
    for arguments in [["runs"], ["show", "run-1"]] {
        let result = try adapt.run(arguments)
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
        #expect(!result.stdout.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{202E}" }, "\(arguments)")
        #expect(result.stdout.contains(#"night \x1b[31mred\x1b[0m \u{202e}x"#), "\(arguments): \(result.stdout)")
    }
    let refused = try adapt.run(["show", "job-\u{1B}[2J"])
    #expect(refused.status == 2)
    #expect(!refused.stderr.contains("\u{1B}"))
    #expect(refused.stderr.contains(#"\x1b[2J"#), "\(refused.stderr)")
}
