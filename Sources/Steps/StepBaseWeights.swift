import AdaptCore
import Model

/// How the train and eval steps keep the frozen model: the `base_weights` of the step's input, which `plan`
/// writes from `train.base_weights` (quantized unless the pipeline chose f32). An input without it was planned
/// before the field existed, when both steps kept the base in f32; it keeps f32, so those runs and their
/// committed bundles replay bit for bit. The manifest's arithmetic section records the storage used (`base_weights`).
enum StepBaseWeights {
    /// The storage `input` asks for; throws `StepError.invalidInput` for a name that is not one.
    static func storage(input: JSONValue, step: String, kind: String) throws -> BaseWeightStorage {
        try choice("base_weights", in: input, absent: .f32, step: step, kind: kind)
    }

    /// The forward products `input` asks for (`forward_products`, which `plan` writes from the pipeline): absent in
    /// inputs planned before the field existed, which computed with sgemm and keep it. Throws
    /// `StepError.invalidInput` for a name that is not one.
    static func forward(input: JSONValue, step: String, kind: String) throws -> ForwardProducts {
        try choice("forward_products", in: input, absent: .sgemm, step: step, kind: kind)
    }

    /// The value of `key` in `input`, `absent` when the input has none.
    private static func choice<T: RawRepresentable & CaseIterable>(_ key: String, in input: JSONValue, absent: T, step: String,
                                                                    kind: String) throws -> T where T.RawValue == String {
        guard let value = input[key] else { return absent }
        guard let name = value.stringValue, let chosen = T(rawValue: name) else {
            let names = T.allCases.map(\.rawValue).joined(separator: " or ")
            throw StepError.invalidInput(step: step, kind: kind, problems: ["\(key) must be \(names)"])
        }
        return chosen
    }

    /// `arithmetic` with `storage` recorded, and the forward kernels when the input chose them (`forward_kernels`:
    /// what this machine runs for the choice; left out for inputs without one, as in every record before it).
    static func recorded(_ arithmetic: BLASArithmetic, storage: BaseWeightStorage, input: JSONValue) -> BLASArithmetic {
        var recorded = arithmetic
        recorded.baseWeights = storage.rawValue
        if input["forward_products"] != nil, let forward = try? forward(input: input, step: "", kind: "") {
            recorded.forwardKernels = forward.kernelName(storage: storage)
        }
        return recorded
    }
}
