import AdaptCore
import Foundation

/// A Hugging Face PEFT LoRA directory: `adapter_model.safetensors` keyed
/// `base_model.model.<module>.lora_A.weight` (A, (rank, in)) and `….lora_B.weight` (B, (out, rank)), rows in
/// Hugging Face's order, and `adapter_config.json` (peft_type LORA, r, lora_alpha, target_modules), which
/// `PeftModel.from_pretrained` loads onto the transformers model of the same architecture.
public enum PEFTFormat {
    public static let weightsFile = "adapter_model.safetensors"
    public static let configFile = "adapter_config.json"
    static let prefix = "base_model.model."

    /// The two files' bytes. The safetensors metadata carries `format: pt` (what transformers expects of a
    /// PyTorch file) and the base model's digest, which an import checks.
    public static func files(_ adapter: PortableAdapter, base: BaseModelShape) throws(AdapterExchangeError) -> (weights: Data, config: Data) {
        let names = try base.names
        var tensors: [Safetensors.Tensor] = []
        for pair in adapter.pairs {
            guard let module = names.huggingFaceModule(block: pair.block, projection: pair.projection) else {
                throw .unknownTensor(file: "the adapter", tensor: adapter.tensors.names[pair.a])
            }
            let aShape = adapter.tensors.shapes[pair.a], bShape = adapter.tensors.shapes[pair.b]
            tensors.append(.init(name: prefix + module + ".lora_A.weight", shape: aShape, values: adapter.tensors.values[pair.a]))
            let b = HuggingFaceRows.from(gguf: adapter.tensors.values[pair.b], shape: bShape, projection: pair.projection,
                                         base: base, names: names)
            tensors.append(.init(name: prefix + module + ".lora_B.weight", shape: bShape, values: b))
        }
        let weights = Safetensors(metadata: ["format": "pt", ExchangeMetadata.baseModelKey: base.digest.hex], tensors: tensors).encoded()
        // PEFT writes an integral alpha as an int; past 2^24 an f32 is no longer an exact integer worth writing so.
        let integral = adapter.alpha.rounded() == adapter.alpha && abs(adapter.alpha) <= 16_777_216
        let alpha: JSONValue = integral ? .int(Int(adapter.alpha)) : .double(Double(adapter.alpha))
        let config: JSONValue = .object([
            "alpha_pattern": .object([:]), "auto_mapping": .null, "base_model_name_or_path": .string(base.fileName),
            "bias": .string("none"), "fan_in_fan_out": .bool(false), "inference_mode": .bool(true),
            "init_lora_weights": .bool(true), "layers_pattern": .null, "layers_to_transform": .null,
            "lora_alpha": alpha, "lora_dropout": .double(0), "modules_to_save": .null, "peft_type": .string("LORA"),
            "r": .int(adapter.rank), "rank_pattern": .object([:]), "revision": .null,
            "target_modules": .array(adapter.targets.compactMap { names.huggingFace[$0] }.map { .string(String($0.split(separator: ".").last!)) }),
            "task_type": .string("CAUSAL_LM"), "use_dora": .bool(false), "use_rslora": .bool(false),
        ])
        return (weights, Data(JSON.pretty(config).utf8))
    }

    /// The adapter a PEFT directory's two files hold, checked against `base`.
    public static func adapter(weights: Data, config: Data, directory: String, base: BaseModelShape,
                               expectedRank: Int?) throws(AdapterExchangeError) -> PortableAdapter {
        let configName = directory + "/" + configFile, weightsName = directory + "/" + weightsFile
        let json = try ExchangeConfiguration.object(config, file: configName)
        guard json["peft_type"]?.stringValue == "LORA" else {
            throw .badConfiguration(file: configName, field: "peft_type", reason: "is not LORA")
        }
        guard let rank = json["r"]?.intValue, rank > 0 else { throw .badConfiguration(file: configName, field: "r", reason: "is not a positive integer") }
        guard let alpha = json["lora_alpha"]?.doubleValue else {
            throw .badConfiguration(file: configName, field: "lora_alpha", reason: "is missing or not a number")
        }
        try PortableAdapter.checkAlpha(alpha, field: "lora_alpha", file: configName)
        try PortableAdapter.checkDropout(json["lora_dropout"], field: "lora_dropout", file: configName)
        for flag in ["use_rslora", "use_dora", "fan_in_fan_out"] where json[flag]?.boolValue == true {
            throw .unsupportedFeature(file: configName, feature: flag)
        }
        for pattern in ["rank_pattern", "alpha_pattern"] where !(json[pattern]?.objectValue?.isEmpty ?? true) {
            throw .unsupportedFeature(file: configName, feature: pattern)
        }
        if let bias = json["bias"]?.stringValue, bias != "none" { throw .unsupportedFeature(file: configName, feature: "bias \(bias == "all" ? "all" : "lora_only")") }
        if let stored = json["modules_to_save"], stored != .null { throw .unsupportedFeature(file: configName, feature: "modules_to_save") }

        let file = try Safetensors(data: weights, name: weightsName)
        try ExchangeMetadata.checkBase(file.metadata, base: base, file: weightsName)
        let names = try base.names
        var pieces: [PortableAdapter.Piece] = []
        for tensor in file.tensors {
            let matrix: AdapterTensorNames.Matrix
            let stem: Substring
            if tensor.name.hasSuffix(".lora_A.weight") { matrix = .a; stem = tensor.name.dropLast(".lora_A.weight".count) }
            else if tensor.name.hasSuffix(".lora_B.weight") { matrix = .b; stem = tensor.name.dropLast(".lora_B.weight".count) }
            else if tensor.name.contains("lora_magnitude_vector") { throw .unsupportedFeature(file: weightsName, feature: "DoRA") }
            else if tensor.name.hasSuffix(".lora_B.bias") { throw .unsupportedFeature(file: weightsName, feature: "LoRA biases") }
            else { throw .unknownTensor(file: weightsName, tensor: tensor.name) }
            guard stem.hasPrefix(prefix), let (block, projection) = names.parseHuggingFaceModule(stem.dropFirst(prefix.count)) else {
                throw .unknownTensor(file: weightsName, tensor: tensor.name)
            }
            let values = matrix == .b
                ? HuggingFaceRows.toGGUF(tensor.values, shape: tensor.shape, projection: projection, base: base, names: names)
                : tensor.values
            pieces.append(.init(block: block, projection: projection, matrix: matrix, shape: tensor.shape, values: values, source: tensor.name))
        }
        let adapter = try PortableAdapter(pieces: pieces, alpha: Float(alpha), base: base, expectedRank: expectedRank, file: weightsName)
        guard adapter.rank == rank else { throw .badConfiguration(file: configName, field: "r", reason: "is \(rank), the tensors have rank \(adapter.rank)") }
        return adapter
    }
}
