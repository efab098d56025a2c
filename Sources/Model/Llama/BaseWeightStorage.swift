/// How a loaded model keeps its frozen matrices (the projections, the embedding and the output projection).
///
/// - `f32`: dequantized once at load into one f32 allocation: four bytes a weight (538 MB for SmolLM2-135M,
///   six times its Q4_1 file), each product reads them directly.
/// - `quantized`: left in the memory-mapped file in their GGUF types; a pass dequantizes one matrix (or one
///   tile of the output projection) at a time into a workspace and multiplies it with the same sgemm calls,
///   so the memory is the file's size plus a few MB, at the cost of dequantizing every matrix once per
///   product. Norms and biases are small and stay in f32 either way.
///
/// Every block's products are the same calls on the same values, so the same bits. The output projection is
/// multiplied a tile of `BaseMatrix.outputTileRows` vocabulary rows at a time, and OpenBLAS blocks and edges a
/// tile differently from the whole matrix for some row counts: about 1% of the logits of a 48-token pass
/// differ in their last bit, and the loss and gradients move by as little (the tests bound it). So the two
/// storages are two arithmetics: a run records which one it used, and each repeats bit for bit.
public enum BaseWeightStorage: String, Sendable, Codable, CaseIterable {
    case f32, quantized
}
