import Foundation
import Model
import Testing
import TestSupport

/// A model whose weights hold a NaN computes NaN logits; the commands that show or use logits say so and
/// exit 1 instead of printing nan with exit 0.
struct NonFiniteOutputTests {
    static let folder = TemporaryDirectory("non-finite")

    /// The tiny model with a NaN in its final norm's weights, so every logit is NaN.
    static let poisoned: URL = {
        let original = TinyModel(seed: 2).writer()
        var writer = GGUFWriter()
        for (key, value) in original.metadata { writer.set(key, value) }
        for tensor in original.tensors {
            var data = tensor.data
            if tensor.name == "output_norm.weight" {
                withUnsafeBytes(of: Float.nan.bitPattern.littleEndian) { data.replaceSubrange(0..<4, with: $0) }
            }
            writer.addRawTensor(tensor.name, dimensions: tensor.dimensions, type: tensor.type, data: data)
        }
        let url = folder.file("nan.gguf")
        try! writer.write(to: url)
        return url
    }()

    @Test func theCheckRefusesNaNAndInfinityAndPassesFiniteValues() throws {
        #expect(throws: ModelError.nonFiniteOutput) { try LlamaModel.requireFinite([1, Float.nan] as [Float]) }
        #expect(throws: ModelError.nonFiniteOutput) { try LlamaModel.requireFinite([-Double.infinity]) }
        try LlamaModel.requireFinite([0, -3.5, 1e30] as [Float])
    }

    @Test(arguments: [["logits", "--prompt", "hello"],
                      ["score", "--prompt", "hello", "--completion", " world"],
                      ["generate", "--prompt", "hello", "--max-tokens", "2", "--greedy"]])
    func commandsReportNonFiniteLogitsAsAFailure(arguments: [String]) throws {
        let result = try Executables.run("adapt", [arguments[0], "--model", Self.poisoned.path] + arguments.dropFirst())
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("the model produced non-finite values"), "\(result.stderr)")
        #expect(!result.stdout.lowercased().contains("nan"))
    }
}
