import AdaptCore
import Adapters
import Foundation
import Model

/// A GGUF-LoRA file as llama.cpp's `convert_lora_to_gguf.py` writes it and `llama_adapter_lora_init` reads it:
/// `general.type = adapter`, `adapter.type = lora`, `adapter.lora.alpha` (f32), the base's architecture, and
/// for each adapted weight `<base name>.lora_a` with dimensions [in, rank] and `<base name>.lora_b` with
/// [rank, out] (ggml order, fastest first), which is adapt's (rank, in) and (out, rank) row-major unchanged.
/// llama.cpp scales B·A·x by alpha / rank, as adapt does.
public enum GGUFLoRA {
    /// The stored type of the matrices: f32 (the converter's default), f16, or q8_0 (which needs rows of a
    /// multiple of 32 values, so B of a small rank falls back to f16, as the converter does).
    public enum Precision: String, Sendable, CaseIterable {
        case f32, f16, q8_0

        func type(rowLength: Int) -> GGMLType {
            switch self {
            case .f32: return .f32
            case .f16: return .f16
            case .q8_0: return rowLength % 32 == 0 ? .q8_0 : .f16
            }
        }
    }

    public static func data(_ adapter: PortableAdapter, base: BaseModelShape, precision: Precision) throws -> Data {
        let names = try base.names
        var writer = GGUFWriter()
        writer.set("general.architecture", string: base.architecture)
        writer.set("general.type", string: "adapter")
        writer.set("adapter.type", string: "lora")
        writer.set("adapter.lora.alpha", float32: adapter.alpha)
        writer.set("general.quantization_version", uint32: 2)
        writer.set(ExchangeMetadata.baseModelKey, string: base.digest.hex)
        for pair in adapter.pairs {
            guard let weight = names.ggufWeight(block: pair.block, projection: pair.projection) else {
                throw AdapterExchangeError.unknownTensor(file: "the adapter", tensor: adapter.tensors.names[pair.a])
            }
            let a = adapter.tensors.shapes[pair.a], b = adapter.tensors.shapes[pair.b]
            writer.addTensor(weight + ".lora_a", dimensions: [a[1], a[0]], values: adapter.tensors.values[pair.a],
                             as: precision.type(rowLength: a[1]))
            writer.addTensor(weight + ".lora_b", dimensions: [b[1], b[0]], values: adapter.tensors.values[pair.b],
                             as: precision.type(rowLength: b[1]))
        }
        return Data(writer.data())
    }

    /// The adapter a GGUF-LoRA file holds, checked against `base` (and `expectedRank` when the lineage has one).
    public static func adapter(at url: URL, base: BaseModelShape, expectedRank: Int?) throws -> PortableAdapter {
        let name = url.lastPathComponent
        let file = try GGUFFile(url: url)
        guard file.string("general.type") == "adapter" else {
            let reason = file.tensor(named: "token_embd.weight") != nil || file.string("general.type") == "model"
                ? "it is a whole model (general.type is not 'adapter')" : "general.type is not 'adapter'"
            throw AdapterExchangeError.notAnAdapter(file: name, reason: reason)
        }
        guard file.string("adapter.type") == "lora" else {
            throw AdapterExchangeError.notAnAdapter(file: name, reason: "adapter.type is not 'lora'")
        }
        guard file.string("general.architecture") == base.architecture else {
            throw AdapterExchangeError.wrongArchitecture(file: name, expected: base.architecture)
        }
        if let stored = file.string(ExchangeMetadata.baseModelKey) {
            try ExchangeMetadata.checkBase([ExchangeMetadata.baseModelKey: stored], base: base, file: name)
        }
        let alpha: Float?
        switch file.metadata["adapter.lora.alpha"] {
        case .float32(let value)?:
            try PortableAdapter.checkAlpha(Double(value), field: "adapter.lora.alpha", file: name)
            alpha = value
        case nil: alpha = nil
        default: throw AdapterExchangeError.badConfiguration(file: name, field: "adapter.lora.alpha", reason: "is not an f32 (llama.cpp refuses it)")
        }
        let names = try base.names
        var pieces: [PortableAdapter.Piece] = []
        for info in file.tensors {
            let matrix: AdapterTensorNames.Matrix
            if info.name.hasSuffix(".lora_a") { matrix = .a } else if info.name.hasSuffix(".lora_b") { matrix = .b }
            else if info.name.hasSuffix("_norm.weight") { throw AdapterExchangeError.unsupportedFeature(file: name, feature: "norm weights in the adapter") }
            else { throw AdapterExchangeError.unknownTensor(file: name, tensor: info.name) }
            guard let (block, projection) = names.parseGGUFWeight(info.name.dropLast(".lora_a".count)) else {
                throw AdapterExchangeError.unknownTensor(file: name, tensor: info.name)
            }
            guard info.dimensions.count == 2 else {
                throw AdapterExchangeError.shapeMismatch(file: name, tensor: info.name, expected: [], actual: info.dimensions.reversed())
            }
            pieces.append(.init(block: block, projection: projection, matrix: matrix, shape: [info.dimensions[1], info.dimensions[0]],
                                values: try file.dequantize(info), source: info.name))
        }
        // Without alpha llama.cpp applies B·A unscaled, which is alpha = rank.
        let rank = pieces.first { $0.matrix == .a }?.shape.first ?? 0
        return try PortableAdapter(pieces: pieces, alpha: alpha ?? Float(rank), base: base, expectedRank: expectedRank, file: name)
    }
}
