/// How a loaded model keeps its frozen matrices (the projections, the embedding and the output projection).
///
/// - `f32`: dequantized once at load into one f32 allocation: four bytes a weight (538 MB for SmolLM2-135M,
///   six times its Q4_1 file), each product reads them directly.
/// - `quantized`: left in the memory-mapped file in their GGUF types; a pass dequantizes one matrix (or one
///   tile of the output projection) at a time into a workspace and multiplies it with the same sgemm calls,
///   so the memory is the file's size plus a few MB, at the cost of dequantizing every matrix once per
///   product. Norms and biases are small and stay in f32 either way.
///
/// Both give the same bits under OpenBLAS's Haswell, Zen and Sandybridge kernels (`BaseMatrix.outputTileRows`
/// says why); under another core type the output projection's input gradient may differ in its last bits,
/// which is why a run records which one it used.
public enum BaseWeightStorage: String, Sendable, Codable, CaseIterable {
    case f32, quantized
}
