import Foundation
import QuantizedKernelsAVX512

/// Y (T, rows) = X (T, columns) · Wᵀ straight from GGML's quantized blocks, for the prompt pass of inference.
///
/// The batched sibling of `QuantizedMatVec`: each token's row of X is rounded to 8 bits per group of 32 exactly
/// as decode rounds it (`PromptActivations`), each task repacks 32 weight rows into two tiles of signed bytes with a
/// float scale and offset per sub-block (`TileRepacking`, a few tens of KB, dropped when the task ends: the model
/// is never held twice), then multiplies them with every token, four at a time, with `vpdpbusd` (`TileProducts`),
/// a chunk of columns at a time. Dequantizing to f32 for sgemm instead moves four bytes a weight and tops out at
/// OpenBLAS's float rate.
///
/// Needs AVX-512 with VNNI; elsewhere, for F16/BF16/F32 matrices, and with `ADAPT_PROMPT_KERNELS=sgemm`, the
/// prompt stays on sgemm over the dequantized matrices. The forward passes of training, scoring and evaluation
/// come here too when their model was loaded with `ForwardProducts.int8` (their own arithmetic, recorded as
/// `forward_kernels`), their tasks on the pass's team (`multiply(_:tokens:columns:x:forEachTask:)`).
///
/// Tasks are (matrix, two tiles of 16 rows) and compute every token the same way whoever runs them, so the result
/// does not depend on the thread count at all.
public enum QuantizedMatMul {
    static let environmentVariable = "ADAPT_PROMPT_KERNELS"

    /// Two tiles of 16 (`TileProducts` multiplies them together).
    static let rowsPerTask = 2 * 16

    /// Bytes of the two tiles a chunk of columns may span: about half of a 48 KB L1 data cache, the rest for the
    /// activations.
    static let chunkBytes = 28 * 1024

    /// The name recorded beside `BLASArithmetic.kernels` for the prompt pass: `int8-avx512vnni`, or `sgemm`
    /// where the kernels do not run.
    static var kernelName: String { isAvailable ? "int8-avx512vnni" : "sgemm" }

    /// Whether this CPU runs the tile kernels and `ADAPT_PROMPT_KERNELS=sgemm` does not ask for the old path.
    static let isAvailable: Bool = {
        #if arch(x86_64)
        if ProcessInfo.processInfo.environment[environmentVariable] == "sgemm" { return false }
        return hasVNNI
        #else
        return false
        #endif
    }()

    /// Whether the CPU has the AVX-512 subsets the tile kernels are compiled for.
    static var hasVNNI: Bool {
        let flags = BLASCoreType.cpuFlags()
        return ["avx512f", "avx512bw", "avx512vl", "avx512_vnni", "f16c"].allSatisfy(flags.contains)
    }

    /// Whether a prompt multiplies matrices of `type` here.
    static func supports(_ type: GGMLType) -> Bool {
        #if arch(x86_64)
        return isAvailable && TileRepacking.types.contains(type.rawValue)
        #else
        return false
        #endif
    }

    /// Yᵢ (T, rowsᵢ) = X · Wᵢᵀ for matrices that read the same X (q, k and v; gate and up): X is rounded once and
    /// the row tiles of all of them make one task list.
    static func multiply(_ products: [QuantizedMatVec.Product], tokens: Int, columns: Int, x: UnsafePointer<Float>,
                         workers requested: Int? = nil) {
        let workers = requested ?? BLAS.threads
        multiply(products, tokens: tokens, columns: columns, x: x) { DecodeTeam.forEachTask($0, members: workers, $1) }
    }

    /// Runs `body(task)` once for every task in 0..<tasks, on whatever threads it has; tasks write disjoint outputs.
    typealias TaskRunner = (_ tasks: Int, _ body: (Int) -> Void) -> Void

    /// `multiply`, its tasks run by `forEachTask` (a training pass's `WorkerTeam`, whose members would otherwise
    /// spin beside the decode team's). The split does not change any bit.
    static func multiply(_ products: [QuantizedMatVec.Product], tokens: Int, columns: Int, x: UnsafePointer<Float>,
                         forEachTask: TaskRunner) {
        #if arch(x86_64)
        precondition(columns % 32 == 0 && products.allSatisfy { columns % $0.type.blockSize == 0 && supports($0.type) })
        let activations = PromptActivations(x, tokens: tokens, columns: columns, forEachTask: forEachTask)
        defer { activations.deallocate() }
        let jobs = products.map { Job(product: $0, columns: columns, tokens: tokens, activations: activations.tiles) }
        // Tasks of `rowsPerTask` rows, matrix after matrix; firstTasks[i] is matrix i's first.
        var firstTasks = [0]
        for product in products { firstTasks.append(firstTasks.last! + (product.rows + rowsPerTask - 1) / rowsPerTask) }
        jobs.withUnsafeBufferPointer { jobs in
            firstTasks.withUnsafeBufferPointer { firstTasks in
                forEachTask(firstTasks.last!) { task in
                    var i = 0
                    while task >= firstTasks[i + 1] { i += 1 }
                    jobs[i].compute(task: task - firstTasks[i])
                }
            }
        }
        #else
        preconditionFailure("no tile kernels on this architecture")
        #endif
    }

    /// SwiGLU of a prompt pass where the tile kernels run (`VectorSwiGLU`: within a few ulp of `Kernels.swiglu`).
    static func swiglu(gate: UnsafePointer<Float>, up: UnsafePointer<Float>, count: Int, into h: UnsafeMutablePointer<Float>) {
        #if arch(x86_64)
        VectorSwiGLU.apply(gate: gate, up: up, count: count, into: h)
        #else
        Kernels.swiglu(gate: gate, up: up, count: count, into: h)
        #endif
    }

    #if arch(x86_64)
    /// What the tasks share. Unchecked because it carries raw pointers: every pointee outlives the
    /// `forEachTask` call that uses it, the inputs are only read, and each task writes only its own rows of `y`.
    struct Job: @unchecked Sendable {
        let product: QuantizedMatVec.Product
        let columns: Int
        let tokens: Int
        let activations: TokenTiles

        func compute(task: Int) {
            let type = product.type.rawValue
            let rowBytes = columns / product.type.blockSize * product.type.blockBytes
            let first = task * QuantizedMatMul.rowsPerTask
            let count = min(QuantizedMatMul.rowsPerTask, product.rows - first)
            let tileBytes = TileRepacking.tileBytes(type, columns: columns)
            let repacked = UnsafeMutableRawPointer.allocate(byteCount: 2 * tileBytes, alignment: 64)
            defer { repacked.deallocate() }
            let (low, high) = (min(count, TileProducts.rows), max(0, count - TileProducts.rows))
            let rows = product.blocks + first * rowBytes
            TileRepacking.repack(type: type, rows: rows, rowBytes: rowBytes, count: low, columns: columns, into: repacked)
            if high > 0 {
                TileRepacking.repack(type: type, rows: rows + TileProducts.rows * rowBytes, rowBytes: rowBytes, count: high, columns: columns,
                                     into: repacked + tileBytes)
            } else {
                (repacked + tileBytes).initializeMemory(as: UInt8.self, repeating: 0, count: tileBytes)
            }
            let masks = (UInt16(truncatingIfNeeded: (1 << low) - 1), UInt16(truncatingIfNeeded: (1 << high) - 1))
            let (subBlock, sums) = (TileRepacking.subBlock(type), TileRepacking.sums(type))
            // The columns in as few chunks as keep both tiles' share within `chunkBytes`, each chunk met by every
            // token before the next: a wide matrix's tiles would not stay in L1 across the tokens otherwise.
            let subBlocks = columns / subBlock
            let chunks = (2 * tileBytes + QuantizedMatMul.chunkBytes - 1) / QuantizedMatMul.chunkBytes
            let perChunk = (subBlocks + chunks - 1) / chunks
            for chunk in stride(from: 0, to: subBlocks, by: perChunk) {
                for t in 0..<((tokens + TileProducts.tokens - 1) / TileProducts.tokens) {
                    let firstToken = t * TileProducts.tokens
                    TileProducts.multiply(repacked: repacked, tileBytes: tileBytes, subBlock: subBlock, sums: sums, activations: activations,
                                          tile: t, validTokens: min(TileProducts.tokens, tokens - firstToken),
                                          subBlocks: chunk..<min(subBlocks, chunk + perChunk), accumulate: chunk > 0,
                                          into: product.y + firstToken * product.rows + first, stride: product.rows, masks: masks)
                }
            }
        }
    }
    #endif
}
