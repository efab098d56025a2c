/// One frozen weight matrix W (out, in) of the base model: `rows` rows of a GGUF tensor from `firstRow` on
/// (a fused tensor holds several projections as row ranges), and where its f32 copy sits when the model
/// keeps one (`BaseWeightStorage.f32`).
struct BaseMatrix: Sendable {
    let info: GGUFTensorInfo
    let firstRow: Int
    let rows: Int
    let columns: Int
    /// Offset in `LlamaModel.weights` of the f32 copy; nil when the matrix stays quantized.
    let offset: Int?

    var floatCount: Int { rows * columns }

    /// Rows of the output projection (or embedding) dequantized per tile when the model stays quantized.
    ///
    /// The input gradient dX = dLogits · W sums over the vocabulary, so tiles of it split that sum: each tile
    /// is one sgemm accumulating into dX (beta 1). OpenBLAS cuts a sum of length k into blocks of GEMM_Q
    /// (halving the last stretch between Q and 2Q) and adds each block's sum to C in turn; tiles of a multiple
    /// of 2·Q are cut at the same places, so that sum keeps the whole product's bits. 3840 is a multiple of 2·Q
    /// for Haswell and Zen (Q = 320) and Sandybridge (Q = 384) — measured: 0 of 146,880 values differ at
    /// 255 × 49152 × 576, while tiles of 768 rows differ in 95% of them under Haswell. The logits themselves
    /// (a sum over the width only) still differ in about 1% of their last bits for some row counts (47 rows:
    /// 27,662 of 2,310,144 under Zen), as OpenBLAS blocks a tile's rows otherwise than the whole matrix's.
    static let outputTileRows = 3840

    /// Writes rows `range` (relative to this matrix) as f32 into `out` (range.count × columns), the values
    /// `Dequantize` gives at load.
    func dequantize(rows range: Range<Int>, from file: GGUFFile, into out: UnsafeMutablePointer<Float>) {
        guard !range.isEmpty else { return }
        let rowBytes = columns / info.type.blockSize * info.type.blockBytes
        let bytes = file.bytes(of: info)
        let first = (firstRow + range.lowerBound) * rowBytes
        BlockDequantizer.convert(UnsafeRawBufferPointer(rebasing: bytes[first..<(first + range.count * rowBytes)]),
                                 type: info.type, count: range.count * columns, into: out)
    }

    /// This matrix as a product of the integer tile kernels writing into y, or nil where they do not read its
    /// type or its width is not a whole number of its blocks and of 32.
    func blockProduct(in file: GGUFFile, into y: UnsafeMutablePointer<Float>) -> QuantizedMatVec.Product? {
        let type = info.type
        guard QuantizedMatMul.supports(type), columns % 32 == 0, columns % type.blockSize == 0 else { return nil }
        let rowBytes = columns / type.blockSize * type.blockBytes
        return QuantizedMatVec.Product(type: type, blocks: file.bytes(of: info).baseAddress! + firstRow * rowBytes, rows: rows, y: y)
    }
}
