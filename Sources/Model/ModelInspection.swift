import AdaptCore
import Foundation

/// What a GGUF file holds and whether this engine can train it: `adapt model inspect`.
///
/// The file is mapped, not loaded: a tensor of a type this reader cannot dequantize, an architecture or a
/// tokenizer it does not support is listed in `unsupported` instead of failing, so one call names every part
/// that stands in the way. Only a file that is not a readable GGUF at all (truncated, corrupt, missing) throws.
public struct ModelInspection: Sendable, Equatable {
    /// `general.architecture`, nil when the file has none.
    public var architecture: String?
    /// Elements of every tensor, of supported types or not.
    public var parameters: Int
    /// Tensor count per ggml type name (`Q4_K`, `F32`, …; `type N` for a number ggml never named).
    public var tensorTypes: [String: Int]
    /// `tokenizer.ggml.model` (`gpt2`, `llama`, …), nil when the file has none.
    public var tokenizer: String?
    /// The chat convention the file's template follows (`chatml`, `llama3`, `gemma`), nil when the file has no
    /// template or one that is not a known convention: training it then needs a chat format named explicitly.
    public var chatFormat: String?
    /// `<architecture>.context_length`.
    public var contextLength: Int?
    /// Each part that keeps the file from loading here, named: `architecture mamba`, `tokenizer t5`,
    /// `tensor type IQ2_XXS (12 tensors)`, or the loader's own message for anything else.
    public var unsupported: [String]
    /// Peak resident memory of a default training run (`estimatedTrainingMemory`) for each way of keeping the
    /// base (`BaseWeightStorage`); empty when the architecture is unsupported, since its sizes are then unknown.
    public var trainingMemoryByBaseWeights: [BaseWeightStorage: Int]
    /// The estimate for the default storage, `quantized`.
    public var trainingMemoryBytes: Int? { trainingMemoryByBaseWeights[.quantized] }

    public var trainable: Bool { unsupported.isEmpty }

    /// Inspects the file at `url`; `sequenceLength` and `rank` are those of the training run the memory is
    /// estimated for (the nightly pipeline's defaults).
    public init(url: URL, sequenceLength: Int = 256, rank: Int = TrainingDefaults.rank) throws {
        let file = try GGUFFile(url: url, acceptingUnsupportedTensorTypes: true)
        architecture = file.string("general.architecture")
        tokenizer = file.string("tokenizer.ggml.model")
        contextLength = architecture.flatMap { file.int("\($0).context_length") }
        parameters = file.tensors.reduce(0) { $0 + $1.elementCount } + file.unsupportedTensors.reduce(0) { $0 + $1.elementCount }
        var histogram: [String: Int] = [:]
        for tensor in file.tensors { histogram[tensor.type.name, default: 0] += 1 }
        for tensor in file.unsupportedTensors { histogram[tensor.typeName, default: 0] += 1 }
        tensorTypes = histogram
        chatFormat = file.string("tokenizer.chat_template").flatMap { try? ChatFormatter(template: $0).convention.rawValue }

        var problems: [String] = []
        var unsupportedTypes: [String: Int] = [:]
        for tensor in file.unsupportedTensors { unsupportedTypes[tensor.typeName, default: 0] += 1 }
        for (name, count) in unsupportedTypes.sorted(by: { $0.key < $1.key }) {
            problems.append("tensor type \(name) (\(count) tensor\(count == 1 ? "" : "s"))")
        }
        var hyperparameters: LlamaModel.Hyperparameters?
        let unreadable = Set(file.unsupportedTensors.map(\.name))
        do {
            hyperparameters = try LlamaModel.Hyperparameters(file: file)
        } catch let ModelError.unsupportedArchitecture(name) {
            problems.append("architecture \(name)")
        } catch let ModelError.missingTensor(name) where unreadable.contains(name) {
            // The embedding is there, in a type listed above; its sizes are then unknown here.
        } catch {
            problems.append("\(error)")
        }
        do {
            _ = try Tokenizer(gguf: file)
        } catch let ModelError.unsupportedTokenizer(model) {
            problems.append("tokenizer \(model)")
        } catch let ModelError.unsupportedPreTokenizer(name) {
            problems.append("pre-tokenizer \(name)")
        } catch {
            problems.append("\(error)")
        }
        // The remaining structure (every tensor present with its shape): only meaningful once the parts above
        // pass, or it would repeat them as missing tensors.
        if problems.isEmpty {
            do { try LlamaModel.validateStructure(of: file) } catch { problems.append("\(error)") }
        }
        unsupported = problems
        var estimates: [BaseWeightStorage: Int] = [:]
        if let hyperparameters {
            for storage in BaseWeightStorage.allCases {
                estimates[storage] = Self.estimatedTrainingMemory(
                    file: file, hyperparameters: hyperparameters, sequenceLength: min(sequenceLength, hyperparameters.contextLength),
                    rank: rank, baseWeights: storage)
            }
        }
        trainingMemoryByBaseWeights = estimates
    }

    /// Peak resident bytes of LoRA training on the attention projections, one sequence of `sequenceLength`
    /// tokens per pass (the trainer runs a batch's sequences one after another on one set of buffers):
    /// - the mapped file, whose pages loading reads once and keeps for single-token decoding;
    /// - with `f32` base weights, every weight dequantized to f32 (`LlamaModel` keeps one copy); with `quantized`,
    ///   the workspace one matrix (or one output tile) is dequantized into at a time;
    /// - the LoRA values, their gradients, AdamW's two moments and the best weights early stopping keeps (5×);
    /// - the recorded forward pass the backward reads (per block the residual stream and norm inputs, q, k,
    ///   v, the attention probabilities (H, T, T), the attention output, gate, up and their product, each
    ///   LoRA's input and A·x; q and k before per-head norms and the block outputs before post norms, where
    ///   the architecture has them), the key/value cache, the logits and their gradient, and one block's worth of
    ///   backward scratch. f32 throughout.
    /// Measured on SmolLM2-135M Q4_1 (256 tokens, batch 1, rank 8 on q, k, v, o): 658 MB estimated for a 677 MB
    /// peak with `quantized`, 1184 for 1206 with `f32` (docs/model.md has the other files).
    public static func estimatedTrainingMemory(file: GGUFFile, hyperparameters h: LlamaModel.Hyperparameters,
                                               sequenceLength T: Int, rank r: Int, baseWeights: BaseWeightStorage = .quantized) -> Int {
        let weights: Int
        switch baseWeights {
        case .f32:
            weights = file.tensors.reduce(0) { $0 + $1.elementCount }
        case .quantized:
            let matrices = file.tensors.filter { $0.dimensions.count == 2 }
            let largest = matrices.filter { $0.dimensions[1] != h.vocabularySize }.map(\.elementCount).max() ?? 0
            let vectors = file.tensors.filter { $0.dimensions.count < 2 }.reduce(0) { $0 + $1.elementCount }
            weights = largest + min(BaseMatrix.outputTileRows, h.vocabularySize) * h.width + vectors
        }
        // The default targets as training resolves them (phi3: one pair on its fused qkv).
        let projections: [Projection] = (try? LoRAConfig().resolved(for: h.architecture).targets) ?? Projection.attention
        let targets: [(output: Int, input: Int)] = projections.map { h.shape(of: $0) }
        let loraValues = h.blockCount * targets.reduce(0) { $0 + r * ($1.input + $1.output) }
        let (C, F, Cq, Ckv, H) = (h.width, h.ffnWidth, h.queryWidth, h.keyValueWidth, h.headCount)
        let blockActivations = T * (4 * C + 2 * Cq + 2 * Ckv + 3 * F + 2) + H * T * T
            + targets.reduce(0) { $0 + T * ($1.input + r) }
            + (h.architecture.queryKeyNorm ? T * (Cq + Ckv + H + h.kvHeadCount) : 0)   // q, k before their norms
            + (h.architecture.postNorms ? T * (2 * C + 2) : 0)                          // outputs before post norms
        let floats = weights + 5 * loraValues
            + h.blockCount * blockActivations           // recorded pass
            + h.blockCount * T * 2 * Ckv                // KV cache
            + 2 * T * C + 2 * T * h.vocabularySize      // final norm, logits and their gradient
            + blockActivations                          // backward scratch
        return file.fileSize + 4 * floats
    }

    /// The `--json` document (DESIGN.md's `model inspect` contract).
    public var json: JSONValue {
        .object([
            "architecture": architecture.map(JSONValue.string) ?? .null,
            "parameters": .int(parameters),
            "tensor_types": .object(tensorTypes.mapValues(JSONValue.int)),
            "tokenizer": tokenizer.map(JSONValue.string) ?? .null,
            "chat_format": chatFormat.map(JSONValue.string) ?? .null,
            "context_length": contextLength.map(JSONValue.int) ?? .null,
            "trainable": .bool(trainable),
            "training_memory_bytes": trainingMemoryBytes.map(JSONValue.int) ?? .null,
            "training_memory_bytes_by_base_weights": .object(Dictionary(uniqueKeysWithValues: trainingMemoryByBaseWeights.map {
                ($0.key.rawValue, JSONValue.int($0.value))
            })),
            "unsupported": .array(unsupported.map(JSONValue.string)),
        ])
    }
}
