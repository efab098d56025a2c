/// How one pass reads the base model's matrices: straight from the f32 copy (`BaseWeightStorage.f32`) or
/// dequantized, a matrix or an output tile at a time, into one workspace (`.quantized`), which the next read
/// overwrites. The products are the same sgemm and sgemv calls on the same values either way.
///
/// One reader per pass and thread: the workspace belongs to it alone.
final class BaseMatrixReader {
    let model: LlamaModel
    let team: WorkerTeam
    /// The model's f32 weights (`LlamaModel.weights`), valid while the pass runs.
    let weights: UnsafePointer<Float>
    private let make: (Int) -> FloatBuffer
    private var workspace: FloatBuffer? = nil

    /// `workspace` makes the buffer on first use (a training pass takes it from its arena).
    init(model: LlamaModel, weights: UnsafePointer<Float>, team: WorkerTeam, workspace: @escaping (Int) -> FloatBuffer = { FloatBuffer(uninitialized: $0) }) {
        self.model = model
        self.weights = weights
        self.team = team
        make = workspace
    }

    /// `body` gets rows `range` of `matrix` (all by default) as f32, (range.count, columns) row-major.
    func withRows<Result>(of matrix: BaseMatrix, _ range: Range<Int>? = nil, _ body: (UnsafePointer<Float>) -> Result) -> Result {
        let range = range ?? 0..<matrix.rows
        if let offset = matrix.offset { return body(weights + offset + range.lowerBound * matrix.columns) }
        if workspace == nil { workspace = make(model.workspaceFloats) }
        let out = workspace!.pointer
        precondition(range.count * matrix.columns <= workspace!.count, "workspace too small for the matrix")
        // Dequantizing writes each row on its own, so any split of the rows gives the same values.
        let rowsPerTask = max(1, (1 << 15) / matrix.columns)
        if team.count > 1 {
            team.forEachRange(range.count, minimum: rowsPerTask) { rows in
                matrix.dequantize(rows: (range.lowerBound + rows.lowerBound)..<(range.lowerBound + rows.upperBound),
                                  from: model.file, into: out + rows.lowerBound * matrix.columns)
            }
        } else {
            let tasks = (range.count + rowsPerTask - 1) / rowsPerTask
            DecodeTeam.forEachTask(tasks, members: range.count * matrix.columns >= 1 << 18 ? BLAS.threads : 1) { task in
                let rows = (task * rowsPerTask)..<min(range.count, (task + 1) * rowsPerTask)
                matrix.dequantize(rows: (range.lowerBound + rows.lowerBound)..<(range.lowerBound + rows.upperBound),
                                  from: model.file, into: out + rows.lowerBound * matrix.columns)
            }
        }
        return body(UnsafePointer(out))
    }

    /// The pieces the output projection is read in: the whole matrix from the f32 copy, else tiles of
    /// `BaseMatrix.outputTileRows` rows (whose sums OpenBLAS splits where it splits the whole product's).
    private var outputTiles: [Range<Int>] {
        let rows = model.output.rows
        guard model.output.offset == nil else { return [0..<rows] }
        return stride(from: 0, to: rows, by: BaseMatrix.outputTileRows).map { $0..<min(rows, $0 + BaseMatrix.outputTileRows) }
    }

    /// Runs `body(task)` for every task on the pass's team, or on the decode team when the pass has none (a
    /// scoring pass with OpenBLAS's thread count): for the integer tile kernels, whose bits ignore the split.
    func forEachTask(_ tasks: Int, _ body: (Int) -> Void) {
        if team.count > 1 { team.forEachTask(tasks, body) } else { DecodeTeam.forEachTask(tasks, members: BLAS.threads, body) }
    }

    /// Logits (n, V) = x (n, C) · Wₒᵤₜᵀ: sgemv for one row, else the team's sgemm, or the integer tile kernels
    /// on the blocks for a model loaded with `ForwardProducts.int8`.
    func logits(_ x: UnsafePointer<Float>, rows n: Int, into out: UnsafeMutablePointer<Float>) {
        let (C, V) = (model.output.columns, model.output.rows)
        if n > 1, model.forwardFromBlocks, let product = model.output.blockProduct(in: model.file, into: out) {
            QuantizedMatMul.multiply([product], tokens: n, columns: C, x: x, forEachTask: forEachTask)
            return
        }
        for tile in outputTiles {
            withRows(of: model.output, tile) { W in
                if n == 1 {
                    BLAS.sgemv(m: tile.count, n: C, a: W, x: x, y: out + tile.lowerBound)
                } else {
                    team.sgemm(transposeB: true, m: n, n: tile.count, k: C, a: x, b: W, c: out + tile.lowerBound, ldc: V)
                }
            }
        }
    }

    /// dX (n, C) = dLogits (n, V) · Wₒᵤₜ, the tiles' sums added in vocabulary order.
    func logitsBackward(_ dLogits: UnsafePointer<Float>, rows n: Int, into dX: UnsafeMutablePointer<Float>) {
        let (C, V) = (model.output.columns, model.output.rows)
        for tile in outputTiles {
            withRows(of: model.output, tile) { W in
                team.sgemm(m: n, n: C, k: tile.count, a: dLogits + tile.lowerBound, lda: V, b: W,
                           beta: tile.lowerBound == 0 ? 0 : 1, c: dX)
            }
        }
    }

    /// Row `token` of the embedding (C floats) into `out`, as the f32 copy holds it.
    func embeddingRow(_ token: Int, into out: UnsafeMutablePointer<Float>) {
        let matrix = model.embedding
        if let offset = matrix.offset {
            out.update(from: weights + offset + token * matrix.columns, count: matrix.columns)
        } else {
            matrix.dequantize(rows: token..<(token + 1), from: model.file, into: out)
        }
    }
}
