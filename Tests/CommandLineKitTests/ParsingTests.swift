@testable import CommandLineKit
import Testing

private let options = [OptionSpec("count", value: "N", help: ""), OptionSpec.json,
                       OptionSpec("tag", value: "T", repeats: true, help: "")]
private let global = [OptionSpec("state", value: "DIR", help: "")]

private func parse(_ args: [String], positionals: [PositionalSpec] = []) throws -> (ParsedArguments, ParsedArguments) {
    try CommandLineTool.parse(args, options: options, global: global, positionals: positionals)
}

@Test func parsesValuesFlagsAndGlobalsInAnyOrder() throws {
    let (args, globals) = try parse(["--count", "3", "--state=/s", "--json", "--tag", "a", "--tag", "b"])
    #expect(try args.int("count") == 3)
    #expect(args.flag("json"))
    #expect(args.strings("tag") == ["a", "b"])
    #expect(globals.string("state") == "/s")
}

@Test func doubleDashEndsOptionsAndEmptyArgumentsAreValues() throws {
    let (args, _) = try parse(["--count", "", "--", "--json"], positionals: [PositionalSpec("TEXT", help: "")])
    #expect(args.string("count") == "")
    #expect(args.string("TEXT") == "--json")
    #expect(!args.flag("json"))
}

@Test func usageErrorsNameTheProblem() {
    #expect(throws: UsageError.self) { try parse(["--nope"]) }
    #expect(throws: UsageError.self) { try parse(["--count"]) }
    #expect(throws: UsageError.self) { try parse(["stray"]) }
    #expect(throws: UsageError.self) { try parse(["--json=maybe"]) }
    #expect(throws: UsageError.self) { try parse([], positionals: [PositionalSpec("FILE", help: "")]) }
    #expect(throws: UsageError.self) { try parse(["--count", "x"]).0.int("count") }
}

@Test func aGlobalOptionBeforeTheCommandStaysGlobalWhenTheCommandHasAnOptionOfTheSameName() async throws {
    let seen = LockedPair()
    let command = Command("jobs", summary: "", options: [OptionSpec("state", value: "S", help: "")]) { invocation in
        seen.set(invocation.global.string("state"), invocation.arguments.string("state"))
    }
    let tool = CommandLineTool(name: "t", summary: "", globalOptions: global, commands: [command])
    #expect(await tool.main(["--state", "/dir", "jobs", "--state", "running"]) == 0)
    #expect(seen.get() == ["/dir", "running"])
}

private final class LockedPair: @unchecked Sendable {  // every access holds `lock`
    private var values: [String?] = []
    private let lock = NSLock()
    func set(_ a: String?, _ b: String?) { lock.withLock { values = [a, b] } }
    func get() -> [String?] { lock.withLock { values } }
}

import Foundation
