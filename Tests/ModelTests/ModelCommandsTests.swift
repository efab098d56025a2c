import Foundation
import Model
import Testing
import TestSupport

/// `adapt model tiny`, `adapt logits` and `adapt score`, run as a real process.
struct ModelCommandsTests {
    static let folder = TemporaryDirectory("model-commands")
    static let tiny: URL = {
        let url = folder.file("tiny.gguf")
        let result = try! Executables.run("adapt", ["model", "tiny", "--out", url.path, "--seed", "5"])
        precondition(result.status == 0, result.stderr)
        return url
    }()

    func json(_ result: ProcessResult) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    /// The executable pins OpenBLAS to its portable core type unless told otherwise, while this process runs the
    /// CPU's own kernels (AVX-512 ones where the CPU has them), whose sums differ in the last bits; the tests that
    /// compare bits let the executable choose as this process did.
    static let sameKernelsAsThisProcess = ["ADAPT_BLAS_CORETYPE": "native"]

    @Test func modelTinyWritesTheSameFileAsTheLibrary() throws {
        #expect(try Data(contentsOf: Self.tiny) == Data(TinyModel(seed: 5).writer().data()))
    }

    /// The base stays in the file's types unless --base-weights f32 asks for the copy; either way the logits are
    /// the library's for that storage, and the JSON says which it was.
    @Test(arguments: [nil, "quantized", "f32"])
    func logitsPrintsTheLastPositionsTopKAsJSON(baseWeights: String?) throws {
        let extra = baseWeights.map { ["--base-weights", $0] } ?? []
        let result = try Executables.run("adapt", ["logits", "--model", Self.tiny.path, "--prompt", "hello world", "--top", "4", "--json"] + extra,
                                         environment: Self.sameKernelsAsThisProcess)
        #expect(result.status == 0, "\(result.stderr)")
        let object = try json(result)
        #expect(Set(object.keys) == ["ids", "top", "base_weights"])
        let storage = BaseWeightStorage(rawValue: baseWeights ?? "quantized")!
        #expect(object["base_weights"] as? String == storage.rawValue)
        let file = try GGUFFile(url: Self.tiny)
        let ids = try Tokenizer(gguf: file).encode("hello world")
        #expect(object["ids"] as? [Int] == ids)
        var cache = KVCache()
        let model = try LlamaModel(file: file, quantizedDecode: false, base: storage)
        let expected = LlamaModel.top(4, of: model.forward(tokens: ids, cache: &cache))
        let top = try #require(object["top"] as? [[String: Any]])
        #expect(top.map { $0["id"] as? Int } == expected.map(\.id))
        #expect(top.map { Float(($0["logit"] as? Double) ?? .nan) } == expected.map(\.logit))
    }

    @Test func logitsRefusesAnEmptyPrompt() throws {
        let result = try Executables.run("adapt", ["logits", "--model", Self.tiny.path, "--prompt", "", "--json"])
        #expect(result.status == 2)
        #expect(result.stdout.isEmpty)
    }

    @Test(arguments: [nil, "quantized", "f32"])
    func scoreTokenizesPromptAndCompletionSeparately(baseWeights: String?) throws {
        let extra = baseWeights.map { ["--base-weights", $0] } ?? []
        let result = try Executables.run("adapt", ["score", "--model", Self.tiny.path, "--prompt", "hello", "--completion", " world is", "--json"] + extra,
                                         environment: Self.sameKernelsAsThisProcess)
        #expect(result.status == 0, "\(result.stderr)")
        let object = try json(result)
        #expect(Set(object.keys) == ["prompt_ids", "completion_ids", "logprobs", "mean_nll", "base_weights"])
        let storage = BaseWeightStorage(rawValue: baseWeights ?? "quantized")!
        #expect(object["base_weights"] as? String == storage.rawValue)
        let file = try GGUFFile(url: Self.tiny)
        let tokenizer = try Tokenizer(gguf: file)
        let prompt = tokenizer.encode("hello"), completion = tokenizer.encode(" world is")
        #expect(object["prompt_ids"] as? [Int] == prompt)
        #expect(object["completion_ids"] as? [Int] == completion)
        let expected = try LlamaModel(file: file, quantizedDecode: false, base: storage).logProbabilities(of: completion, after: prompt)
        let logprobs = try #require(object["logprobs"] as? [Double])
        #expect(logprobs.count == expected.count && zip(logprobs, expected).allSatisfy { abs($0 - $1) < 1e-12 })
        #expect(abs((object["mean_nll"] as? Double ?? 0) + expected.reduce(0, +) / Double(expected.count)) < 1e-12)
    }

    @Test func scoreRefusesABaseWeightsValueItDoesNotKnow() throws {
        let result = try Executables.run("adapt", ["score", "--model", Self.tiny.path, "--prompt", "a", "--completion", "b", "--base-weights", "int8"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--base-weights") && result.stderr.contains("must be quantized or f32"), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func scoreWithChatFormatsThePromptAsAUserTurn() throws {
        let result = try Executables.run("adapt", ["score", "--model", Self.tiny.path, "--prompt", "hi", "--completion", "yo", "--chat", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let tokenizer = try Tokenizer(gguf: try GGUFFile(url: Self.tiny))
        let formatted = "<|im_start|>system\n\(TinyModel.systemLine)<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
        #expect(try json(result)["prompt_ids"] as? [Int] == tokenizer.encode(formatted, parseSpecial: true))
    }
}
