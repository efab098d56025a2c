import Foundation
import Model
import Testing
import TestSupport

/// `logits`, `score` and `model bench` refuse inputs longer than the model's context (the tiny model's is
/// 256 tokens) before running a pass, as `generate` does, instead of failing an allocation.
struct ContextLengthTests {
    static var tiny: URL { TinyModelFile.url }
    /// Far more than 256 tokens of text.
    static let longText = String(repeating: "hello world ", count: 400)

    func run(_ arguments: [String]) throws -> ProcessResult {
        try Executables.run("adapt", arguments + ["--model", Self.tiny.path])
    }

    @Test func logitsRefusesAPromptLongerThanTheContext() throws {
        let result = try run(["logits", "--prompt", Self.longText])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("tokens but the model's context holds 256; shorten it"), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func scoreRefusesAPromptAndCompletionLongerThanTheContext() throws {
        let result = try run(["score", "--prompt", "hello", "--completion", Self.longText])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("the prompt and completion are"), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func scoreStillScoresTextThatFits() throws {
        let result = try run(["score", "--prompt", "hello", "--completion", " world", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test(arguments: [["--prompt-tokens", "250", "--decode-tokens", "10"],
                      ["--prompt-tokens", "8", "--decode-tokens", "1", "--train-tokens", "100000"],
                      ["--prompt-tokens", "8", "--decode-tokens", "1", "--train-dropout", "1"]])
    func benchRefusesLengthsPastTheContextAsAUsageError(extra: [String]) throws {
        let result = try run(["model", "bench", "--repeat", "1", "--json"] + extra)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func benchRunsWithinTheContext() throws {
        let result = try run(["model", "bench", "--repeat", "1", "--prompt-tokens", "200", "--decode-tokens", "56",
                              "--train-tokens", "256", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
    }
}
