import Foundation
import Model
import Testing
import TestSupport

/// `--threads` takes 1 to 256 wherever it is given, as `train` always did; more is a usage error, not a
/// request the system may refuse part-way.
struct ThreadsOptionTests {
    static let folder = TemporaryDirectory("threads-option")
    static let tiny: URL = {
        let url = folder.file("tiny.gguf")
        try! TinyModel(seed: 4).write(to: url)
        return url
    }()

    @Test(arguments: [["logits", "--prompt", "hi"], ["score", "--prompt", "hi", "--completion", " there"],
                      ["generate", "--prompt", "hi", "--max-tokens", "1"], ["model", "bench", "--repeat", "1"]])
    func threadCountsPastTheLimitAreUsageErrors(command: [String]) throws {
        for bad in ["0", "257", "100000"] {
            let result = try Executables.run("adapt", command + ["--model", Self.tiny.path, "--threads", bad])
            #expect(result.status == 2, "\(command[0]) --threads \(bad): \(result.stderr)")
            #expect(result.stderr.contains("--threads must be between 1 and 256"), "\(result.stderr)")
        }
    }

    @Test func aThreadCountWithinTheLimitRuns() throws {
        let result = try Executables.run("adapt", ["logits", "--model", Self.tiny.path, "--prompt", "hi", "--threads", "2"])
        #expect(result.status == 0, "\(result.stderr)")
    }
}
