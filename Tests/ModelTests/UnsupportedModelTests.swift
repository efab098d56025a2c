import Foundation
import Model
import Testing
import TestSupport

/// A GGUF file of an architecture, tokenizer or tensor type this build does not support: loading refuses it
/// with an error naming the part and listing what is supported (exit 1, nothing stored), and
/// `adapt model inspect` lists the part under `unsupported` instead of failing.
struct UnsupportedModelTests {
    static let folder = TemporaryDirectory("unsupported-models")

    enum Part: String, CaseIterable {
        case architecture, tokenizer, tensorType
    }

    /// The tiny model with one unsupported part.
    static func file(_ part: Part) throws -> URL {
        let writer = TinyModel(seed: 2).writer()
        var edited = GGUFWriter()
        for (key, value) in writer.metadata { edited.set(key, value) }
        switch part {
        case .architecture: edited.set("general.architecture", string: "mamba")
        case .tokenizer: edited.set("tokenizer.ggml.model", string: "t5")
        case .tensorType: break
        }
        for tensor in writer.tensors {
            if part == .tensorType && tensor.name == "blk.0.ffn_up.weight" {
                // IQ2_XXS: 66 bytes per 256 values; the row of 64 is padded to a whole block by a wider shape.
                edited.addRawTensor(tensor.name, dimensions: [256, 32], type: 16, data: [UInt8](repeating: 0, count: 66 * 32))
            } else {
                edited.addRawTensor(tensor.name, dimensions: tensor.dimensions, type: tensor.type, data: tensor.data)
            }
        }
        let url = folder.file("\(part.rawValue).gguf")
        try edited.write(to: url)
        return url
    }

    /// What the refusal must name: the part, and what is supported instead.
    static func expectedWords(_ part: Part) -> [String] {
        switch part {
        case .architecture: return ["mamba"] + Architecture.supportedNames
        case .tokenizer: return ["t5", "gpt2", "llama"]
        case .tensorType: return ["blk.0.ffn_up.weight", "IQ2_XXS", "Q4_K", "IQ4_XS"]
        }
    }

    func json(_ result: ProcessResult) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    @Test(arguments: Part.allCases)
    func enqueueRefusesTheFileNamingThePartAndStoresNothing(part: Part) throws {
        let url = try Self.file(part)
        let state = TemporaryDirectory("unsupported-state").url.path
        let result = try Executables.run("adapt", ["--state", state, "enqueue", "nightly", "--lineage", "logbook",
                                                   "--model", url.path, "--json"])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stdout.isEmpty)
        for word in Self.expectedWords(part) { #expect(result.stderr.contains(word), "\(part): \(result.stderr)") }
        let runs = try Executables.run("adapt", ["--state", state, "runs", "--json"])
        #expect(runs.status == 0, "\(runs.stderr)")
        let stored = try JSONSerialization.jsonObject(with: Data(runs.stdout.utf8)) as? [Any]
        #expect(stored?.isEmpty == true, "\(runs.stdout)")
    }

    @Test(arguments: Part.allCases)
    func aCommandThatLoadsTheModelFailsNamingThePart(part: Part) throws {
        let result = try Executables.run("adapt", ["logits", "--model", try Self.file(part).path, "--prompt", "hello", "--json"])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stdout.isEmpty)
        for word in Self.expectedWords(part) { #expect(result.stderr.contains(word), "\(part): \(result.stderr)") }
    }

    @Test(arguments: Part.allCases)
    func inspectListsThePartInsteadOfFailing(part: Part) throws {
        let result = try Executables.run("adapt", ["model", "inspect", try Self.file(part).path, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let object = try json(result)
        #expect(object["trainable"] as? Bool == false)
        let unsupported = try #require(object["unsupported"] as? [String])
        switch part {
        case .architecture:
            #expect(unsupported == ["architecture mamba"])
            #expect(object["architecture"] as? String == "mamba")
            #expect(object["training_memory_bytes"] is NSNull)
        case .tokenizer:
            #expect(unsupported == ["tokenizer t5"])
            #expect(object["tokenizer"] as? String == "t5")
        case .tensorType:
            #expect(unsupported == ["tensor type IQ2_XXS (1 tensor)"])
            let types = try #require(object["tensor_types"] as? [String: Int])
            #expect(types["IQ2_XXS"] == 1)
        }
    }

    @Test func anEmbeddingOfAnUnsupportedTypeIsReportedOnceByItsType() throws {
        let writer = TinyModel(seed: 2).writer()
        var edited = GGUFWriter()
        for (key, value) in writer.metadata { edited.set(key, value) }
        for tensor in writer.tensors {
            if tensor.name == "token_embd.weight" {
                let rows = tensor.dimensions.reduce(1, *) / 256
                edited.addRawTensor(tensor.name, dimensions: [256, rows], type: 16, data: [UInt8](repeating: 0, count: 66 * rows))
            } else {
                edited.addRawTensor(tensor.name, dimensions: tensor.dimensions, type: tensor.type, data: tensor.data)
            }
        }
        let url = Self.folder.file("embedding.gguf")
        try edited.write(to: url)
        let inspection = try ModelInspection(url: url)
        #expect(inspection.unsupported == ["tensor type IQ2_XXS (1 tensor)"])
        #expect(inspection.trainingMemoryBytes == nil && !inspection.trainable)
    }

    @Test func inspectDescribesASupportedModel() throws {
        let url = Self.folder.file("tiny.gguf")
        let tiny = TinyModel(seed: 2)
        try tiny.write(to: url)
        let result = try Executables.run("adapt", ["model", "inspect", url.path, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let object = try json(result)
        #expect(Set(object.keys) == ["architecture", "parameters", "tensor_types", "tokenizer", "chat_format", "context_length",
                                     "trainable", "training_memory_bytes", "training_memory_bytes_by_base_weights", "unsupported"])
        let file = try GGUFFile(url: url)
        #expect(object["architecture"] as? String == "llama")
        #expect(object["parameters"] as? Int == file.tensors.reduce(0) { $0 + $1.elementCount })
        #expect(object["tensor_types"] as? [String: Int] == ["F32": file.tensors.count])
        #expect(object["tokenizer"] as? String == "gpt2")
        #expect(object["chat_format"] as? String == "chatml")
        #expect(object["context_length"] as? Int == tiny.contextLength)
        #expect(object["trainable"] as? Bool == true)
        #expect(object["unsupported"] as? [String] == [])
        // With an f32 base at least the mapped file and the f32 weights; the rest is LoRA state and activations.
        // The default (quantized) keeps the file's types and dequantizes one matrix at a time.
        let memory = try #require(object["training_memory_bytes"] as? Int)
        let byStorage = try #require(object["training_memory_bytes_by_base_weights"] as? [String: Int])
        let model = try LlamaModel(file: file)
        #expect(byStorage["quantized"] == memory)
        #expect(try #require(byStorage["f32"]) > file.fileSize + model.weightBytes)
        #expect(memory < byStorage["f32"] ?? 0)
        for storage in BaseWeightStorage.allCases {
            #expect(byStorage[storage.rawValue] == ModelInspection.estimatedTrainingMemory(
                file: file, hyperparameters: model.hyperparameters, sequenceLength: 256, rank: 8, baseWeights: storage))
        }
        let human = try Executables.run("adapt", ["model", "inspect", url.path])
        #expect(human.status == 0 && human.stdout.contains("chatml") && human.stdout.contains("yes"))
    }

    @Test func inspectFailsOnAFileThatIsNotGGUF() throws {
        let url = Self.folder.file("notes.gguf")
        try Data("not a model\n".utf8).write(to: url)
        let result = try Executables.run("adapt", ["model", "inspect", url.path, "--json"])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("not a GGUF file"), "\(result.stderr)")
    }
}
