import Model

/// How the train and eval steps keep the frozen model: in the file's quantized types, dequantized a matrix at
/// a time (about the file's size in memory instead of four bytes a weight). The numbers are the f32 copy's
/// under the pinned kernels, so runs recorded before keep replaying bit for bit; the manifest's arithmetic
/// section records the choice (`base_weights`).
enum StepBaseWeights {
    static let storage: BaseWeightStorage = .quantized

    /// `arithmetic` with this choice recorded.
    static func recorded(_ arithmetic: BLASArithmetic) -> BLASArithmetic {
        var recorded = arithmetic
        recorded.baseWeights = storage.rawValue
        return recorded
    }
}
