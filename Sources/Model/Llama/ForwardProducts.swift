/// How the forward passes of training, scoring and evaluation multiply a frozen matrix kept in its GGUF type
/// (`BaseWeightStorage.quantized`) by their activations.
///
/// - `sgemm`: the matrix dequantized to f32 and multiplied with OpenBLAS, the values the backward pass
///   multiplies with; the arithmetic of every run before the choice existed.
/// - `int8`: straight from the blocks with the prompt kernels of generation (`QuantizedMatMul`: activations
///   rounded to 8 bits per group of 32, integer dot products), about three times sgemm's rate with AVX-512 VNNI.
///   Recorded as `int8-v1`: the AVX-512 VNNI, AVX2 and portable implementations give the same bits, so a run
///   replays and resumes on any CPU. Only `ADAPT_PROMPT_KERNELS=sgemm` keeps the passes on sgemm, and the run
///   records that it did (`kernelName`). The backward still multiplies the dequantized f32 values, so its
///   gradients are those of a forward pass that differs from the recorded one by the 8-bit rounding.
///
/// The two give different bits (the loss moves in its fourth digit), so a run records which one it computed
/// with (`BLASArithmetic.forwardKernels`) and a resume or replay under the other is reported as a difference.
/// With f32 storage every product is sgemm whatever is asked.
public enum ForwardProducts: String, Sendable, Codable, CaseIterable {
    case sgemm, int8

    /// The kernels a pass of a model kept as `storage` runs its multi-token forward products with when `self`
    /// is asked for: `int8-v1` (`QuantizedMatMul`'s name) or `sgemm`.
    public func kernelName(storage: BaseWeightStorage) -> String {
        usesBlocks(storage: storage) ? QuantizedMatMul.kernelName : "sgemm"
    }

    /// `name` as this version records it: `int8-avx512vnni`, which records made before `int8-v1` hold for the same
    /// arithmetic, is `int8-v1`; every other name is itself.
    public static func recordedName(_ name: String) -> String { QuantizedMatMul.canonicalName(name) }

    /// Whether forward products read the blocks for a model kept as `storage`.
    func usesBlocks(storage: BaseWeightStorage) -> Bool {
        self == .int8 && storage == .quantized && QuantizedMatMul.isAvailable
    }
}
