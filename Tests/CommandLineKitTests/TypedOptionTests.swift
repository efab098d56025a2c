@testable import CommandLineKit
import AdaptCore
import Testing

private let top = Option("top", value: "K", default: 10, in: 1...100, help: "how many to show")
private let limit = Option<Int?>("limit", in: 1...1_000, help: "at most N")
private let ratio = Option("ratio", value: "R", default: 0.5, in: 0...1, help: "a share")
private let name = Option<String?>("name", value: "NAME", help: "a name")
private let mode = Option("mode", value: "M", default: "fast", help: "how")
private let lineage = Option<Lineage?>("lineage", value: "L", default: nil, help: "the lineage") { try Lineage(validating: $0) }
private let tag = Option<String?>("tag", value: "T", default: nil, repeats: true, help: "a tag") { $0 }
private let dryRun = Flag("dry-run", help: "change nothing")
private let declared: [any OptionDeclaration] = [top, limit, ratio, name, mode, lineage, tag, dryRun, .json]

private func parse(_ arguments: [String]) throws -> ParsedArguments {
    try CommandLineTool.parse(arguments, options: declared.map(\.spec), global: [], positionals: []).0
}

@Test func anOptionNotGivenHasItsDeclaredDefault() throws {
    let a = try parse([])
    #expect(try a[top] == 10)
    #expect(try a[limit] == nil)
    #expect(try a[ratio] == 0.5)
    #expect(try a[name] == nil)
    #expect(try a[mode] == "fast")
    #expect(try a[lineage] == nil)
    #expect(!a[dryRun] && !a[.json])
    #expect(!a.given(top))
}

@Test func givenValuesAreParsedToTheDeclaredType() throws {
    let a = try parse(["--top", "3", "--limit=7", "--ratio", "0.25", "--name", "x", "--mode", "slow", "--lineage", "mail",
                       "--tag", "a", "--tag", "b", "--dry-run", "--json"])
    #expect(try a[top] == 3)
    #expect(try a[limit] == 7)
    #expect(try a[ratio] == 0.25)
    #expect(try a.required(name) == "x")
    #expect(try a[mode] == "slow")
    #expect(try a[lineage] == Lineage("mail"))
    #expect(try a.all(tag) == ["a", "b"])
    #expect(a[dryRun] && a[.json] && a.given(top))
}

@Test(arguments: [
    (["--top", "x"], "--top expects an integer, got 'x'"),
    (["--top", "0"], "--top must be between 1 and 100, got 0"),
    (["--limit", "5000"], "--limit must be between 1 and 1000, got 5000"),
    (["--ratio", "nan"], "--ratio expects a number, got 'nan'"),
    (["--ratio", "2"], "--ratio must be between 0.0 and 1.0, got 2.0"),
    (["--lineage", "a.b"], "--lineage: lineage 'a.b' is not a valid name; use 1 to 64 letters, digits, '-' or '_', starting with a letter or digit"),
])
func aBadValueIsAUsageErrorNamingTheOption(arguments: [String], message: String) throws {
    let a = try parse(arguments)
    #expect {
        _ = try a[top]; _ = try a[limit]; _ = try a[ratio]; _ = try a[lineage]
    } throws: { error in
        (error as? UsageError)?.message == message
    }
}

@Test func aMissingRequiredOptionIsAUsageError() throws {
    #expect { try parse([]).required(name) } throws: { ($0 as? UsageError)?.message == "missing --name" }
}

@Test func helpShowsEachDeclaredDefaultOnce() {
    let command = Command("show", summary: "s", options: declared) { _ in }
    let help = CommandLineTool(name: "t", summary: "", commands: [command]).help(for: command)
    #expect(help.contains("--top K"))
    #expect(help.contains("how many to show (default 10)"))
    #expect(help.contains("a share (default 0.5)"))
    #expect(help.contains("how (default fast)"))
    #expect(help.contains("at most N\n") || help.hasSuffix("at most N"))
    #expect(help.contains("--dry-run"))
    #expect(help.contains("--json"))
}
