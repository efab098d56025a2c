import Foundation

/// Y (n, rows) = X (n, columns) · Wᵀ for a base matrix kept in its GGUF blocks (`BaseWeightStorage.quantized`):
/// the product of a prompt pass or of scoring. W is dequantized a tile of rows at a time into a buffer small
/// enough to stay in the core's cache and multiplied at once by a single-threaded sgemm into the tile's columns
/// of Y. Dequantizing the whole matrix first (`BaseMatrixReader.withRows`) writes it to memory in f32 and sgemm
/// reads it back: four bytes a weight each way, where a tile never leaves the cache.
///
/// The tiles are cut by the matrix's shape alone and each writes only its own columns of Y, so the result has
/// the same bits whatever the thread count and whichever thread ran which tile. It differs from one sgemm over
/// the whole f32 matrix in the last bits (OpenBLAS blocks a narrow product otherwise), so this is an arithmetic
/// of its own: passes that are recorded and replayed (training, the eval step) keep the reader's.
enum QuantizedTileProduct {
    /// Floats of one dequantized tile: 256 KB, within a core's L2 cache on the machines measured.
    static let tileFloats = 1 << 16

    /// Rows of W per tile: a multiple of 16 (whole column panels of OpenBLAS's sgemm kernels), at least 16.
    static func tileRows(columns: Int) -> Int { max(16, tileFloats / columns / 16 * 16) }

    /// Y = X · Wᵀ for `matrix`, which must be kept quantized; row t of Y starts at `y + t · ldy` (default: the
    /// matrix's row count).
    static func multiply(_ matrix: BaseMatrix, file: GGUFFile, x: UnsafePointer<Float>, rows n: Int,
                         into y: UnsafeMutablePointer<Float>, ldy: Int? = nil) {
        precondition(matrix.offset == nil, "the tiled product reads the quantized blocks of a matrix kept quantized")
        let rowBytes = matrix.columns / matrix.info.type.blockSize * matrix.info.type.blockBytes
        let first = matrix.firstRow * rowBytes
        let bytes = file.bytes(of: matrix.info)
        multiply(matrix.info.type, blocks: UnsafeRawBufferPointer(rebasing: bytes[first..<(first + matrix.rows * rowBytes)]),
                 rows: matrix.rows, columns: matrix.columns, x: x, count: n, into: y, ldy: ldy ?? matrix.rows)
    }

    /// Y (n, rows) = X (n, columns) · Wᵀ for W (rows, columns) stored as `blocks` of `type`, row after row.
    /// `members` threads share the tiles (default: OpenBLAS's count, which is held at one meanwhile so that the
    /// tiles' sgemm calls run side by side instead of inside each other).
    static func multiply(_ type: GGMLType, blocks: UnsafeRawBufferPointer, rows: Int, columns: Int, x: UnsafePointer<Float>,
                         count n: Int, into y: UnsafeMutablePointer<Float>, ldy: Int, members: Int? = nil) {
        precondition(columns % type.blockSize == 0 && blocks.count == rows * columns / type.blockSize * type.blockBytes)
        let rowBytes = columns / type.blockSize * type.blockBytes
        let rowsPerTile = tileRows(columns: columns)
        let tiles = (rows + rowsPerTile - 1) / rowsPerTile
        // Small products are not worth waking a thread for.
        let members = n * rows * columns < 1 << 18 ? 1 : members ?? BLAS.threads
        BLAS.withThreadCount(1) {
            DecodeTeam.forEachTask(tiles, members: members) { tile in
                let range = (tile * rowsPerTile)..<min(rows, (tile + 1) * rowsPerTile)
                withUnsafeTemporaryAllocation(of: Float.self, capacity: range.count * columns) { w in
                    Dequantize.convert(UnsafeRawBufferPointer(rebasing: blocks[(range.lowerBound * rowBytes)..<(range.upperBound * rowBytes)]),
                                       type: type, count: range.count * columns, into: w.baseAddress!)
                    BLAS.sgemm(transposeB: true, m: n, n: range.count, k: columns, a: x, b: w.baseAddress!,
                               c: y + range.lowerBound, ldc: ldy)
                }
            }
        }
    }
}
