import AdaptCore
import Foundation
import Model
import Testing
import TestSupport

/// `logits`, `score` and `adapt-model-bench` refuse inputs longer than the model's context (the tiny model's is
/// 256 tokens) before running a pass, as `generate` does, instead of failing an allocation.
struct ContextLengthTests {
    static var tiny: URL { TinyModelFile.url }
    /// Far more than 256 tokens of text.
    static let longText = String(repeating: "hello world ", count: 400)

    func run(_ arguments: [String], executable: String = "adapt") throws -> ProcessResult {
        try Executables.run(executable, arguments + ["--model", Self.tiny.path])
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
        let result = try run(["--repeat", "1", "--json"] + extra, executable: "adapt-model-bench")
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func benchRunsWithinTheContext() throws {
        let result = try run(["--repeat", "1", "--prompt-tokens", "200", "--decode-tokens", "56", "--train-tokens", "256", "--json"],
                             executable: "adapt-model-bench")
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSON.decode(JSONValue.self, from: result.stdout, context: "stdout")
        for key in ["threads", "load_ms", "prompt_tokens", "prompt_tokens_per_second", "decode_tokens", "decode_tokens_per_second",
                    "weight_bytes", "peak_rss_bytes", "train_tokens", "train_tokens_per_second", "train_cpu_seconds", "train_dropout"] {
            #expect(report.objectValue?[key] != nil, "\(key) missing from \(result.stdout)")
        }
    }

    @Test func theBenchIsNotAnAdaptCommand() throws {
        let result = try Executables.run("adapt", ["model", "bench", "--repeat", "1"])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(!(try Executables.run("adapt", ["--help"]).stdout.contains("model bench")))
    }
}
