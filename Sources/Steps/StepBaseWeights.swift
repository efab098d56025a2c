import AdaptCore
import Model

/// How the train and eval steps keep the frozen model: the `base_weights` of the step's input, which `plan`
/// writes from `train.base_weights` (quantized unless the pipeline chose f32). An input without it was planned
/// before the field existed, when both steps kept the base in f32; it keeps f32, so those runs and their
/// committed bundles replay bit for bit. The manifest's arithmetic section records the storage used (`base_weights`).
enum StepBaseWeights {
    /// The storage `input` asks for; throws `StepError.invalidInput` for a name that is not one.
    static func storage(input: JSONValue, step: String, kind: String) throws -> BaseWeightStorage {
        guard let value = input["base_weights"] else { return .f32 }
        guard let name = value.stringValue, let storage = BaseWeightStorage(rawValue: name) else {
            let names = BaseWeightStorage.allCases.map(\.rawValue).joined(separator: " or ")
            throw StepError.invalidInput(step: step, kind: kind, problems: ["base_weights must be \(names)"])
        }
        return storage
    }

    /// The forward products `input` asks for (`forward_products`, which `plan` writes from the pipeline): absent in
    /// inputs planned before the field existed, which computed with sgemm and keep it. Throws
    /// `StepError.invalidInput` for a name that is not one.
    static func forward(input: JSONValue, step: String, kind: String) throws -> ForwardProducts {
        guard let value = input["forward_products"] else { return .sgemm }
        guard let name = value.stringValue, let forward = ForwardProducts(rawValue: name) else {
            let names = ForwardProducts.allCases.map(\.rawValue).joined(separator: " or ")
            throw StepError.invalidInput(step: step, kind: kind, problems: ["forward_products must be \(names)"])
        }
        return forward
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
