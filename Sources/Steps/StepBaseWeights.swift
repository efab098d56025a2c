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

    /// `arithmetic` with `storage` recorded.
    static func recorded(_ arithmetic: BLASArithmetic, storage: BaseWeightStorage) -> BLASArithmetic {
        var recorded = arithmetic
        recorded.baseWeights = storage.rawValue
        return recorded
    }
}
