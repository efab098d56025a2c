import AdaptCore
import AdapterExchange
import Adapters
import Foundation
import Model

/// A GGUF model file: header, metadata, tensor table, then everything that reads a model's metadata or tensors
/// from it (inspection, hyperparameters and weights, the tokenizer, the chat template, the base-model shape).
public enum GGUFFuzz: FuzzTarget {
    public static let name = "gguf"
    /// Elements dequantized per input at most: a fuzzed table may describe large tensors a small file holds.
    static let elementBudget = 1 << 20

    public static func run(_ data: Data) {
        FuzzInput.withFile(data) { url in
            guard let file = try? GGUFFile(url: url, acceptingUnsupportedTensorTypes: true) else { return }
            var budget = elementBudget
            for info in file.tensors where info.elementCount <= budget {
                budget -= info.elementCount
                _ = try? file.dequantize(info)
            }
            _ = try? ModelInspection(url: url)
            _ = try? Tokenizer(gguf: file)
            _ = try? ChatFormatter(gguf: file)
            _ = try? LlamaModel.Hyperparameters(file: file)
            _ = try? BaseModelShape(model: url)
            if file.unsupportedTensors.isEmpty, let strict = try? GGUFFile(url: url) {
                _ = try? LlamaModel(file: strict)
            }
        }
    }

    public static func seeds() throws -> [Data] {
        var quantized = FuzzBase.tinyModel
        quantized.weightType = .q8_0
        quantized.width = 32
        quantized.ffnWidth = 32
        return [Data(FuzzBase.tinyModel.writer().data()), Data(quantized.writer().data())]
    }
}

/// The smallest llama the project's writer makes, as the base model of the adapter formats' targets.
enum FuzzBase {
    static let tinyModel: TinyModel = {
        var model = TinyModel(seed: 7)
        model.blockCount = 1
        model.width = 8
        model.headCount = 2
        model.kvHeadCount = 1
        model.ffnWidth = 16
        model.contextLength = 16
        return model
    }()

    /// The tiny model's shape, read the way `adapt registry import` reads a base model's.
    static let shape: BaseModelShape = {
        var result: BaseModelShape?
        FuzzInput.withFile(Data(tinyModel.writer().data())) { url in
            do { result = try BaseModelShape(model: url) } catch { FuzzFinding.fail("base", "the tiny model does not load: \(error)") }
        }
        return result!
    }()

    /// A random adapter on q and v of the tiny model.
    static func adapter(rank: Int = 2) -> PortableAdapter { PortableAdapter(file: adapterFile(rank: rank)) }

    static func adapterFile(rank: Int = 2) -> AdapterFile {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func uniform() -> Float {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return Float(state >> 40) / Float(1 << 24) * 2 - 1
        }
        var names: [String] = [], shapes: [[Int]] = [], values: [[Float]] = []
        for block in 0..<shape.blockCount {
            for target in ["q", "v"] {
                let (output, input) = shape.projections[target]!
                names.append("blk.\(block).\(target).lora_a"); shapes.append([rank, input])
                values.append((0..<(rank * input)).map { _ in uniform() })
                names.append("blk.\(block).\(target).lora_b"); shapes.append([output, rank])
                values.append((0..<(output * rank)).map { _ in uniform() * 0.05 })
            }
        }
        let configuration: JSONValue = .object(["seed": .int(7)])
        let metadata = AdapterFileMetadata(
            baseModelDigest: shape.digest, chatConvention: "chatml", templateDigest: nil, targets: ["q", "v"], rank: rank,
            alpha: 4, steps: 1, trainingExamples: 1, heldOutExamples: 0, truncatedExamples: 0, trainingTokens: 1,
            metrics: ["final_loss": 0.5], trainingConfiguration: configuration,
            trainingConfigurationDigest: JSON.digest(configuration))
        return AdapterFile(metadata: metadata, tensors: NamedTensors(names: names, shapes: shapes, values: values))
    }
}
