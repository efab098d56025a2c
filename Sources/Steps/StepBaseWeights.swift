import Model

/// How the train and eval steps keep the frozen model: dequantized to f32 at load. The quantized storage needs
/// a sixth of the memory for a Q4 file but differs from it in the last bits of the logits
/// (`BaseWeightStorage`), so switching the steps to it changes every recorded run's digests; it stays the
/// f32 copy until the committed run bundles are recorded again. The manifest's arithmetic section records
/// the choice (`base_weights`).
enum StepBaseWeights {
    static let storage: BaseWeightStorage = .f32

    /// `arithmetic` with this choice recorded.
    static func recorded(_ arithmetic: BLASArithmetic) -> BLASArithmetic {
        var recorded = arithmetic
        recorded.baseWeights = storage.rawValue
        return recorded
    }
}
