/// Everything that can be wrong with an adapter made by another tool (a GGUF-LoRA, a PEFT or an mlx-lm
/// directory, their safetensors files) or with an export: the bytes, and whether the adapter fits the base
/// model it is imported for.
///
/// Descriptions name the file, the field and the way out; values read from a file appear only as numbers,
/// never as its text.
public enum AdapterExchangeError: Error, Equatable, CustomStringConvertible {
    /// The bytes are not a safetensors file (header length, JSON, offsets).
    case notSafetensors(file: String, reason: String)
    /// The file ends before the data its header describes.
    case truncated(file: String, expected: Int, actual: Int)
    /// A tensor is stored in a type this reader does not convert.
    case unsupportedType(file: String, tensor: String)
    /// A file the format needs is missing from the directory.
    case missingFile(directory: String, file: String)
    /// A configuration field is missing or impossible.
    case badConfiguration(file: String, field: String, reason: String)
    /// A GGUF that is not a LoRA adapter (a whole model, another adapter kind).
    case notAnAdapter(file: String, reason: String)
    /// The adapter was made for a model of another architecture.
    case wrongArchitecture(file: String, expected: String)
    /// The adapter says it was made for another base model file.
    case otherBaseModel(file: String, expected: String, found: String)
    /// A tensor name that adapts nothing in the base model.
    case unknownTensor(file: String, tensor: String)
    /// Only one half (A or B) of a LoRA pair is present.
    case missingHalf(file: String, tensor: String)
    /// A tensor's shape does not fit the base model's weight.
    case shapeMismatch(file: String, tensor: String, expected: [Int], actual: [Int])
    /// The adapter's rank is not the rank the lineage's adapters have, or differs between tensors.
    case rankMismatch(file: String, expected: Int, actual: Int)
    /// The model given to an export is not the one the adapter was trained on.
    case modelIsNotTheBase(adapter: String, model: String, base: String)
    /// A feature the adapt model does not apply (DoRA, rsLoRA, biases, per-module ranks).
    case unsupportedFeature(file: String, feature: String)
    /// The architecture has no tensor naming here.
    case unsupportedArchitecture(String)
    /// The adapter's targets have no name in the other tools for this architecture (phi3's q, k, v or gate, up
    /// adapted apart, where every other tool adapts the fused tensor as a whole).
    case targetsWithoutNames(architecture: String, targets: [String])
    /// Reading or writing failed.
    case io(String)

    public var description: String {
        switch self {
        case let .notSafetensors(file, reason):
            return "\(file) is not a safetensors file: \(reason); pass the file PEFT or mlx-lm saved, copied whole"
        case let .truncated(file, expected, actual):
            return "\(file) is truncated: \(actual) bytes, expected \(expected); copy the file again"
        case let .unsupportedType(file, tensor):
            return "\(file): tensor \(tensor) is stored in a type other than F32, F16 or BF16 (or Q8_0 in a GGUF); convert it to f32 or f16 first"
        case let .missingFile(directory, file):
            return "\(directory) has no \(file); pass the directory the adapter was saved to"
        case let .badConfiguration(file, field, reason):
            return "\(file): \(field) \(reason); fix the file or save the adapter again"
        case let .notAnAdapter(file, reason):
            return "\(file) is not a LoRA adapter: \(reason); pass a GGUF-LoRA file (as convert_lora_to_gguf.py or 'adapt registry export' writes it)"
        case let .wrongArchitecture(file, expected):
            return "\(file) was made for another model architecture, not \(expected); import it into a lineage on its own base model"
        case let .otherBaseModel(file, expected, found):
            return "\(file) was made for base model \(found.prefix(12)), this lineage is on \(expected.prefix(12)); import it into a lineage on that base model or pass that model with --model"
        case let .unknownTensor(file, tensor):
            return "\(file): tensor \(tensor) adapts no weight of the base model; it was made for another base model"
        case let .missingHalf(file, tensor):
            return "\(file): tensor \(tensor) has only one of its two LoRA halves; the file is incomplete, save it again"
        case let .shapeMismatch(file, tensor, expected, actual):
            return "\(file): tensor \(tensor) has shape \(actual), the base model needs \(expected); it was made for another base model or another rank"
        case let .rankMismatch(file, expected, actual):
            return "\(file) has LoRA rank \(actual), the lineage's adapters have rank \(expected); train it with rank \(expected) or import it into another lineage"
        case let .modelIsNotTheBase(adapter, model, base):
            return "\(adapter) was trained on base model \(base.prefix(12)), the model given is \(model.prefix(12)); pass its base model with --model"
        case let .unsupportedFeature(file, feature):
            return "\(file) uses \(feature), which adapt does not apply; save a plain LoRA adapter"
        case let .unsupportedArchitecture(architecture):
            return "architecture \(architecture) has no adapter exchange names in this build (\(AdapterTensorNames.architectures.joined(separator: ", ")) have); its adapters stay in adapt's own format"
        case let .targetsWithoutNames(architecture, targets):
            return "the adapter targets \(targets.joined(separator: ", ")), which other tools do not adapt apart on \(architecture) (they adapt its fused qkv and gate_up tensors whole); train the adapter again, as q, k, v then train one qkv pair and gate, up one gate_up pair, which export"
        case let .io(reason):
            return reason
        }
    }
}
