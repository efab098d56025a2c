import Foundation
import Model
import Testing
import TestSupport

/// `--threads` takes 1 to the most threads this OpenBLAS build runs (its MAX_THREADS) wherever it is given;
/// more is a usage error, not a request quietly cut down or refused by the system part-way.
struct ThreadsOptionTests {
    static var tiny: URL { TinyModelFile.url }

    @Test(arguments: [["adapt", "logits", "--prompt", "hi"], ["adapt", "score", "--prompt", "hi", "--completion", " there"],
                      ["adapt", "generate", "--prompt", "hi", "--max-tokens", "1"], ["adapt-model-bench", "--repeat", "1"]],
          ["0", "\(BLAS.maximumThreads + 1)", "100000"])
    func threadCountsPastTheLimitAreUsageErrors(command: [String], bad: String) throws {
        let result = try Executables.run(command[0], Array(command.dropFirst()) + ["--model", Self.tiny.path, "--threads", bad])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("--threads must be between 1 and \(BLAS.maximumThreads)"), "\(result.stderr)")
    }

    @Test func aCountPastOpenBLASsLimitIsRefusedRatherThanCutDown() throws {
        let saved = BLAS.threads
        defer { BLAS.threads = saved }
        #expect(throws: ModelError.tooManyThreads(requested: BLAS.maximumThreads + 1, maximum: BLAS.maximumThreads)) {
            try BLAS.setThreads(BLAS.maximumThreads + 1)
        }
        try BLAS.setThreads(1)
        #expect(BLAS.threads == 1)
    }

    @Test func aThreadCountWithinTheLimitRuns() throws {
        let result = try Executables.run("adapt", ["logits", "--model", Self.tiny.path, "--prompt", "hi", "--threads", "2"])
        #expect(result.status == 0, "\(result.stderr)")
    }
}
