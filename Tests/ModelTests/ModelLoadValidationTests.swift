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

/// What is passed as a model file must be one: a directory or a FIFO is named as such, and a file without
/// an architecture says which key is missing.
struct ModelFileKindTests {
    let directory = TemporaryDirectory("model-kind")

    @Test func aDirectoryIsNamedAsADirectory() throws {
        let result = try Executables.run("adapt", ["logits", "--model", directory.path, "--prompt", "hi"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("it is a directory, not a regular file"), "\(result.stderr)")
    }

    @Test func aFIFOIsRefusedWithoutBlocking() throws {
        let fifo = directory.file("model.fifo")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        #expect(throws: ModelError.fileUnreadable(path: fifo.path, reason: "it is a FIFO, not a regular file")) {
            _ = try GGUFFile(url: fifo)
        }
    }

    @Test func aMissingArchitectureNamesTheKey() throws {
        let original = TinyModel(seed: 1).writer()
        var writer = GGUFWriter()
        for (key, value) in original.metadata where key != "general.architecture" { writer.set(key, value) }
        for t in original.tensors { writer.addRawTensor(t.name, dimensions: t.dimensions, type: t.type, data: t.data) }
        let url = directory.file("no-arch.gguf")
        try writer.write(to: url)
        #expect(throws: ModelError.missingMetadata(key: "general.architecture")) { _ = try LlamaModel(url: url) }
    }
}
