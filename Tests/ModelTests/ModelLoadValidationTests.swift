import Foundation
import Model
import Testing
import TestSupport

/// Files that parse as GGUF but describe a model no pass could run correctly are refused at load, naming
/// the values at fault, instead of crashing or printing NaN later.
struct ModelLoadValidationTests {
    let directory = TemporaryDirectory("model-validation")

    /// The tiny model with `change` applied to its GGUF contents, written to `name`.
    func write(_ name: String, _ change: (inout GGUFWriter) -> Void) throws -> URL {
        var writer = TinyModel(seed: 1).writer()
        change(&writer)
        let url = directory.file(name)
        try writer.write(to: url)
        return url
    }

    /// The tiny model's tokenizer with one more control token than its embedding has rows.
    func oversizedTokenizer(_ writer: inout GGUFWriter) {
        let (tokens, types) = TinyModel.vocabulary
        writer.set("tokenizer.ggml.tokens", strings: tokens + ["<|extra|>"])
        writer.set("tokenizer.ggml.token_type", int32s: types + [3])
    }

    @Test func refusesATokenizerWithMoreTokensThanEmbeddingRows() throws {
        let url = try write("tokens.gguf", oversizedTokenizer)
        let rows = TinyModel.vocabulary.tokens.count
        #expect(throws: ModelError.vocabularyMismatch(key: "tokenizer.ggml.tokens", count: rows + 1, embeddingRows: rows)) {
            _ = try LlamaModel(url: url)
        }
    }

    @Test func refusesAVocabSizeThatDisagreesWithTheEmbedding() throws {
        let rows = TinyModel.vocabulary.tokens.count
        let url = try write("vocab-size.gguf") { $0.set("llama.vocab_size", uint32: UInt32(rows + 5)) }
        #expect(throws: ModelError.vocabularyMismatch(key: "llama.vocab_size", count: rows + 5, embeddingRows: rows)) {
            _ = try LlamaModel(url: url)
        }
    }

    @Test(arguments: ["logits", "score"])
    func commandsRefuseATokenizerLargerThanTheEmbeddingWithoutCrashing(command: String) throws {
        let url = try write("tokens-\(command).gguf", oversizedTokenizer)
        // The prompt is the one token past the embedding, which a pass would read out of bounds.
        let tokenizer = try Tokenizer(gguf: try GGUFFile(url: url))
        #expect(tokenizer.encode("<|extra|>", parseSpecial: true) == [TinyModel.vocabulary.tokens.count])
        var arguments = [command, "--model", url.path, "--prompt", "<|extra|>", "--special"]
        if command == "score" { arguments += ["--completion", "<|extra|>"] }
        let result = try Executables.run("adapt", arguments)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("counts \(TinyModel.vocabulary.tokens.count + 1) tokens"))
        #expect(result.stderr.contains("has \(TinyModel.vocabulary.tokens.count) rows"))
    }
}

/// RoPE's base and RMSNorm's ε must be positive finite numbers: anything else makes every logit NaN.
struct ModelNumericMetadataTests {
    let directory = TemporaryDirectory("model-metadata")

    static let badValues: [Float] = [.nan, -1, 0, .infinity]

    func load(_ key: String, _ value: Float) throws {
        var writer = TinyModel(seed: 1).writer()
        writer.set(key, float32: value)
        let url = directory.file("metadata.gguf")
        try writer.write(to: url)
        _ = try LlamaModel(url: url)
    }

    func expectRefused(_ key: String, _ value: Float) {
        do {
            try load(key, value)
            Issue.record("\(key) = \(value) was accepted")
        } catch let ModelError.invalidMetadataValue(refused, _) {
            #expect(refused == key)
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test(arguments: badValues) func refusesARopeBaseThatIsNotPositiveAndFinite(value: Float) {
        expectRefused("llama.rope.freq_base", value)
    }

    @Test(arguments: badValues) func refusesAnRMSEpsilonThatIsNotPositiveAndFinite(value: Float) {
        expectRefused("llama.attention.layer_norm_rms_epsilon", value)
    }

    @Test func theMessageNamesTheKeyAndTheWayOut() {
        let message = ModelError.invalidMetadataValue(key: "llama.rope.freq_base", value: -1).description
        #expect(message.contains("llama.rope.freq_base is -1.0") && message.contains("positive finite"))
    }
}
