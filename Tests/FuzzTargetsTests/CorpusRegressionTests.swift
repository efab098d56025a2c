import Foundation
import FuzzTargets
import Testing
import TestSupport

/// Every fuzz target over its committed corpus and the inputs that once crashed it: a reader change that brings
/// an old crash back stops this suite (a trap ends the test process), without the fuzz build.
@Suite struct CorpusRegressionTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The files under Fuzz/<kind>/<target>/, sorted (an empty list when the directory does not exist).
    static func inputs(_ kind: String, _ target: String) throws -> [URL] {
        let directory = root.appendingPathComponent("Fuzz/\(kind)/\(target)")
        guard FileManager.default.fileExists(atPath: directory.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { !$0.lastPathComponent.hasPrefix(".") }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    @Test(arguments: FuzzTargets.names)
    func readerSurvivesItsCommittedCorpusAndPastCrashes(target name: String) throws {
        let target = try #require(FuzzTargets.named(name))
        if name == "tokenizer" {
            try #require(CheckoutModel.isPresent, "the tokenizer target needs the default model; run scripts/fetch-model")
            // The fuzz scripts run from the package root, where the target finds the model; tests run elsewhere.
            setenv("ADAPT_FUZZ_MODEL", CheckoutModel.url.path, 1)
        }
        let corpus = try Self.inputs("Corpus", name)
        #expect(!corpus.isEmpty, "Fuzz/Corpus/\(name) is empty; scripts/fuzz --seeds writes it")
        for url in try corpus + Self.inputs("Regressions", name) {
            target.run(try Data(contentsOf: url))
        }
    }
}
