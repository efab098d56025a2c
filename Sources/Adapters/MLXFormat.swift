import AdaptCore
import Foundation

/// An mlx-lm LoRA directory: `adapters.safetensors` keyed `<module>.lora_a` ((in, rank), the transpose of
/// adapt's A) and `<module>.lora_b` ((rank, out), B transposed, rows in Hugging Face's order), and
/// `adapter_config.json` with `fine_tune_type`, `num_layers` and `lora_parameters {rank, scale, dropout, keys}`,
/// which `mlx_lm.tuner.utils.load_adapters` reads. mlx's scale is alpha / rank, used as it is.
public enum MLXFormat {
    public static let weightsFile = "adapters.safetensors"
    public static let configFile = "adapter_config.json"

    public static func files(_ adapter: PortableAdapter, base: BaseModelShape) throws(AdapterExchangeError) -> (weights: Data, config: Data) {
        let names = try base.names
        var tensors: [Safetensors.Tensor] = []
        for pair in adapter.pairs {
            guard let module = names.huggingFaceModule(block: pair.block, projection: pair.projection) else {
                throw .unknownTensor(file: "the adapter", tensor: adapter.tensors.names[pair.a])
            }
            let aShape = adapter.tensors.shapes[pair.a], bShape = adapter.tensors.shapes[pair.b]
            tensors.append(.init(name: module + ".lora_a", shape: [aShape[1], aShape[0]],
                                 values: transpose(adapter.tensors.values[pair.a], rows: aShape[0], columns: aShape[1])))
            let b = HuggingFaceRows.from(gguf: adapter.tensors.values[pair.b], shape: bShape, projection: pair.projection,
                                         base: base, names: names)
            tensors.append(.init(name: module + ".lora_b", shape: [bShape[1], bShape[0]], values: transpose(b, rows: bShape[0], columns: bShape[1])))
        }
        let weights = Safetensors(metadata: ["format": "mlx", ExchangeMetadata.baseModelKey: base.digest.hex], tensors: tensors).encoded()
        let config: JSONValue = .object([
            "fine_tune_type": .string("lora"), "model": .string(base.fileName), "num_layers": .int(base.blockCount),
            "lora_parameters": .object([
                "rank": .int(adapter.rank), "scale": .double(Double(adapter.alpha) / Double(adapter.rank)), "dropout": .double(0),
                "keys": .array(adapter.targets.compactMap { names.huggingFace[$0] }.map { .string($0) }),
            ]),
        ])
        return (weights, Data(JSON.pretty(config).utf8))
    }

    public static func adapter(weights: Data, config: Data, directory: String, base: BaseModelShape,
                               expectedRank: Int?) throws(AdapterExchangeError) -> PortableAdapter {
        let configName = directory + "/" + configFile, weightsName = directory + "/" + weightsFile
        let json = try ExchangeConfiguration.object(config, file: configName)
        let kind = json["fine_tune_type"]?.stringValue ?? "lora"
        guard kind == "lora" else { throw .unsupportedFeature(file: configName, feature: kind == "dora" ? "DoRA" : "a full fine-tune") }
        guard let parameters = json["lora_parameters"], let rank = parameters["rank"]?.intValue, rank > 0 else {
            throw .badConfiguration(file: configName, field: "lora_parameters.rank", reason: "is missing or not a positive integer")
        }
        guard let scale = parameters["scale"]?.doubleValue, scale.isFinite, scale > 0 else {
            throw .badConfiguration(file: configName, field: "lora_parameters.scale", reason: "is missing or not a positive number")
        }
        // The scale times the rank is the alpha the adapter applies with, held to the same bound as every alpha.
        try PortableAdapter.checkAlpha(scale * Double(rank), field: "lora_parameters.scale", file: configName)
        try PortableAdapter.checkDropout(parameters["dropout"], field: "lora_parameters.dropout", file: configName)
        if let layers = json["num_layers"]?.intValue, layers >= 0, layers < base.blockCount {
            throw .unsupportedFeature(file: configName, feature: "LoRA on only the last \(layers) of \(base.blockCount) blocks")
        }
        let file = try Safetensors(data: weights, name: weightsName)
        try ExchangeMetadata.checkBase(file.metadata, base: base, file: weightsName)
        let names = try base.names
        var pieces: [PortableAdapter.Piece] = []
        for tensor in file.tensors {
            let matrix: AdapterTensorNames.Matrix
            if tensor.name.hasSuffix(".lora_a") { matrix = .a } else if tensor.name.hasSuffix(".lora_b") { matrix = .b }
            else if tensor.name.hasSuffix(".m") { throw .unsupportedFeature(file: weightsName, feature: "DoRA") }
            else { throw .unknownTensor(file: weightsName, tensor: tensor.name) }
            guard let (block, projection) = names.parseHuggingFaceModule(tensor.name.dropLast(".lora_a".count)) else {
                throw .unknownTensor(file: weightsName, tensor: tensor.name)
            }
            guard tensor.shape.count == 2 else {
                throw .shapeMismatch(file: weightsName, tensor: tensor.name, expected: [], actual: tensor.shape)
            }
            // Back to adapt's layout: (rank, in) for A, (out, rank) for B.
            let shape = [tensor.shape[1], tensor.shape[0]]
            var values = transpose(tensor.values, rows: tensor.shape[0], columns: tensor.shape[1])
            if matrix == .b { values = HuggingFaceRows.toGGUF(values, shape: shape, projection: projection, base: base, names: names) }
            pieces.append(.init(block: block, projection: projection, matrix: matrix, shape: shape, values: values, source: tensor.name))
        }
        // mlx keeps scale = alpha / rank; alpha is recovered in double so a round trip gives the same f32.
        let adapter = try PortableAdapter(pieces: pieces, alpha: Float(scale * Double(rank)), base: base,
                                          expectedRank: expectedRank, file: weightsName)
        guard adapter.rank == rank else {
            throw .badConfiguration(file: configName, field: "lora_parameters.rank", reason: "is \(rank), the tensors have rank \(adapter.rank)")
        }
        return adapter
    }

    static func transpose(_ values: [Float], rows: Int, columns: Int) -> [Float] {
        var out = [Float](repeating: 0, count: values.count)
        for r in 0..<rows { for c in 0..<columns { out[c * rows + r] = values[r * columns + c] } }
        return out
    }
}
