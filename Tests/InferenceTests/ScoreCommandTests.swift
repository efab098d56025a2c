import AdaptCore
import Foundation
import Testing
import TestSupport

/// `adapt score --adapter`: the held-out score of a completion under an adapter, refused for another model.
private func score(_ extra: [String]) throws -> ProcessResult {
    try Executables.run("adapt", ["score", "--model", TinyLlama.url.path, "--prompt", "hello",
                                  "--completion", "LOG ENTRY", "--json"] + extra)
}

private func meanNLL(_ result: ProcessResult) throws -> Double? {
    try JSON.decode([String: JSONValue].self, from: result.stdout, context: "adapt score --json")["mean_nll"]?.doubleValue
}

@Test func scoreWithAnAdapterChangesTheLogProbabilitiesAndDoesSoRepeatably() throws {
    let adapter = try GenerateFixtures.adapterFile(seed: 3)
    let base = try score([])
    let adapted = try score(["--adapter", adapter.path])
    let again = try score(["--adapter", adapter.path])
    #expect(base.status == 0 && adapted.status == 0, "\(base.stderr)\(adapted.stderr)")
    let (b, a) = (try #require(try meanNLL(base)), try #require(try meanNLL(adapted)))
    #expect(a != b)
    #expect(try meanNLL(again) == a)
}

@Test(arguments: [("base model", "was trained on base model"), ("convention", "chat convention")])
func scoreRefusesAnAdapterMadeForAnotherBaseModelOrConvention(other: String, message: String) throws {
    let adapter = other == "base model"
        ? try GenerateFixtures.adapterFile(seed: 3, baseModel: Digest.sha256("another model"))
        : try GenerateFixtures.adapterFile(seed: 3, convention: "gemma")
    let result = try score(["--adapter", adapter.path])
    #expect(result.status == 1)
    #expect(result.stderr.contains(message), "\(result.stderr)")
    #expect(result.stdout.isEmpty)
}
