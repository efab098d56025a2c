import Foundation
import QuantizedKernels
import QuantizedKernelsAVX2
import QuantizedKernelsAVX512

/// Y (T, rows) = X (T, columns) · Wᵀ straight from GGML's quantized blocks, for the prompt pass of inference.
///
/// The batched sibling of `QuantizedMatVec`: each token's row of X is rounded to 8 bits per group of 32 exactly
/// as decode rounds it (`PromptActivations`), each task repacks 32 weight rows into two tiles of signed bytes with a
/// float scale and offset per sub-block (`TileRepacking`, a few tens of KB, dropped when the task ends: the model
/// is never held twice), then multiplies them with every token, a chunk of columns at a time. Dequantizing to f32
/// for sgemm instead moves four bytes a weight and tops out at OpenBLAS's float rate.
///
/// One arithmetic, `int8-v1`, three implementations giving the same bits (`Path`): `vpdpbusd` with AVX-512 VNNI
/// (`TileProducts`), AVX2 (`TileKernels.vectorMultiply`) and plain Swift for any CPU (`TileKernels`). For
/// F16/BF16/F32 matrices, and with `ADAPT_PROMPT_KERNELS=sgemm`, the prompt stays on sgemm over the dequantized
/// matrices. The forward passes of training, scoring and evaluation come here too when their model was loaded with
/// `ForwardProducts.int8` (their own arithmetic, recorded as `forward_kernels`), their tasks on the pass's team
/// (`multiply(_:tokens:columns:x:forEachTask:)`).
///
/// Tasks are (matrix, two tiles of 16 rows) and compute every token the same way whoever runs them, so the result
/// does not depend on the thread count at all.
public enum QuantizedMatMul {
    static let environmentVariable = "ADAPT_PROMPT_KERNELS"

    /// The implementations of the int8 tile kernels: `avx512vnni` where the CPU has AVX-512 with VNNI, `avx2` where
    /// it has AVX2, FMA and F16C, else `portable`. `ADAPT_PROMPT_KERNELS=avx512vnni|avx2|portable` forces one
    /// (a CPU without what it needs runs the fastest it has instead); `=sgemm` turns the kernels off.
    enum Path: String, Sendable, CaseIterable {
        case avx512vnni, avx2, portable
    }

    /// The name a run records for the tile kernels' arithmetic, whichever implementation computed it.
    static let int8Name = "int8-v1"

    /// What records made before `int8-v1` hold for the same arithmetic (the VNNI kernels were its only
    /// implementation then): read as `int8-v1`, so those runs replay and resume unchanged.
    static let legacyInt8Name = "int8-avx512vnni"

    /// `name` as this version records it (`int8-avx512vnni` is `int8-v1`).
    static func canonicalName(_ name: String) -> String { name == legacyInt8Name ? int8Name : name }

    /// Two tiles of 16 (`TileProducts` multiplies them together).
    static let rowsPerTask = 2 * 16

    /// Bytes of the two tiles a chunk of columns may span: about half of a 48 KB L1 data cache, the rest for the
    /// activations.
    static let chunkBytes = 28 * 1024

    /// The name recorded beside `BLASArithmetic.kernels` for the prompt pass: `int8-v1`, or `sgemm` where the
    /// kernels are turned off.
    static var kernelName: String { isAvailable ? int8Name : "sgemm" }

    /// The implementation this process runs, nil when `ADAPT_PROMPT_KERNELS=sgemm` turns the kernels off.
    static let path: Path? = path(asked: ProcessInfo.processInfo.environment[environmentVariable], cpuFlags: BLASCoreType.cpuFlags())

    /// The implementation for the value of `ADAPT_PROMPT_KERNELS` (`asked`) on a CPU with `flags`.
    static func path(asked: String?, cpuFlags flags: Set<String>) -> Path? {
        if asked == "sgemm" { return nil }
        if let asked, let forced = Path(rawValue: asked), canRun(forced, cpuFlags: flags) { return forced }
        // The default, or a forced implementation this CPU lacks: the fastest it runs (`allCases` is fastest first).
        return Path.allCases.first { canRun($0, cpuFlags: flags) } ?? .portable
    }

    /// Whether a CPU with `flags` runs `path`'s compilation.
    static func canRun(_ path: Path, cpuFlags flags: Set<String>) -> Bool {
        #if arch(x86_64)
        switch path {
        case .avx512vnni: return ["avx512f", "avx512bw", "avx512vl", "avx512_vnni", "f16c"].allSatisfy(flags.contains)
        case .avx2: return ["avx2", "fma", "f16c"].allSatisfy(flags.contains)
        case .portable: return true
        }
        #else
        return path == .portable
        #endif
    }

    /// Whether the tile kernels run (`ADAPT_PROMPT_KERNELS=sgemm` does not ask for the old path).
    static var isAvailable: Bool { path != nil }

    /// Whether the CPU has the AVX-512 subsets the VNNI kernels are compiled for.
    static var hasVNNI: Bool { canRun(.avx512vnni, cpuFlags: BLASCoreType.cpuFlags()) }

    /// Whether a prompt multiplies matrices of `type` here.
    static func supports(_ type: GGMLType) -> Bool {
        isAvailable && QuantizedKernels.TileKernels.types.contains(type.rawValue)
    }

    /// Yᵢ (T, rowsᵢ) = X · Wᵢᵀ for matrices that read the same X (q, k and v; gate and up): X is rounded once and
    /// the row tiles of all of them make one task list.
    static func multiply(_ products: [QuantizedMatVec.Product], tokens: Int, columns: Int, x: UnsafePointer<Float>,
                         workers requested: Int? = nil, path: Path? = path) {
        let workers = requested ?? BLAS.threads
        multiply(products, tokens: tokens, columns: columns, x: x, path: path) { DecodeTeam.forEachTask($0, members: workers, $1) }
    }

    /// Runs `body(task)` once for every task in 0..<tasks, on whatever threads it has; tasks write disjoint outputs.
    typealias TaskRunner = (_ tasks: Int, _ body: (Int) -> Void) -> Void

    /// `multiply`, its tasks run by `forEachTask` (a training pass's `WorkerTeam`, whose members would otherwise
    /// spin beside the decode team's). The split does not change any bit, nor does `path`.
    static func multiply(_ products: [QuantizedMatVec.Product], tokens: Int, columns: Int, x: UnsafePointer<Float>,
                         path: Path? = path, forEachTask: TaskRunner) {
        guard let path else { preconditionFailure("the tile kernels are turned off (\(environmentVariable)=sgemm)") }
        precondition(columns % 32 == 0 && products.allSatisfy { columns % $0.type.blockSize == 0 && supports($0.type) })
        let activations = PromptActivations(x, tokens: tokens, columns: columns, path: path, forEachTask: forEachTask)
        defer { activations.deallocate() }
        let jobs = products.map { Job(product: $0, columns: columns, tokens: tokens, activations: activations, path: path) }
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
    }

    /// SwiGLU of a prompt pass where the tile kernels run: `VectorSwiGLU` (within a few ulp of `Kernels.swiglu`)
    /// with the AVX-512 implementation, else `Kernels.swiglu`. A prompt of generation is never replayed, and training
    /// and scoring keep the scalar loop, so this is the one place the implementations may differ in the last bits.
    static func swiglu(gate: UnsafePointer<Float>, up: UnsafePointer<Float>, count: Int, into h: UnsafeMutablePointer<Float>) {
        #if arch(x86_64)
        if path == .avx512vnni {
            VectorSwiGLU.apply(gate: gate, up: up, count: count, into: h)
            return
        }
        #endif
        Kernels.swiglu(gate: gate, up: up, count: count, into: h)
    }

    /// What the tasks share. Unchecked because it carries raw pointers: every pointee outlives the
    /// `forEachTask` call that uses it, the inputs are only read, and each task writes only its own rows of `y`.
    struct Job: @unchecked Sendable {
        let product: QuantizedMatVec.Product
        let columns: Int
        let tokens: Int
        let activations: PromptActivations
        let path: Path

        func compute(task: Int) {
            let type = product.type.rawValue
            let rowBytes = columns / product.type.blockSize * product.type.blockBytes
            let first = task * QuantizedMatMul.rowsPerTask
            let count = min(QuantizedMatMul.rowsPerTask, product.rows - first)
            let tileBytes = QuantizedKernels.TileKernels.tileBytes(type, columns: columns)
            let repacked = UnsafeMutableRawPointer.allocate(byteCount: 2 * tileBytes, alignment: 64)
            defer { repacked.deallocate() }
            let tileRows = QuantizedKernels.TileKernels.rows, tileTokens = QuantizedKernels.TileKernels.tokens
            let (low, high) = (min(count, tileRows), max(0, count - tileRows))
            let rows = product.blocks + first * rowBytes
            repack(type, rows, rowBytes: rowBytes, count: low, into: repacked)
            if high > 0 {
                repack(type, rows + tileRows * rowBytes, rowBytes: rowBytes, count: high, into: repacked + tileBytes)
            } else {
                (repacked + tileBytes).initializeMemory(as: UInt8.self, repeating: 0, count: tileBytes)
            }
            let masks = (UInt16(truncatingIfNeeded: (1 << low) - 1), UInt16(truncatingIfNeeded: (1 << high) - 1))
            // The columns in as few chunks as keep both tiles' share within `chunkBytes`, each chunk met by every
            // token before the next: a wide matrix's tiles would not stay in L1 across the tokens otherwise.
            let subBlocks = columns / QuantizedKernels.TileKernels.subBlock(type)
            let chunks = (2 * tileBytes + QuantizedMatMul.chunkBytes - 1) / QuantizedMatMul.chunkBytes
            let perChunk = (subBlocks + chunks - 1) / chunks
            for chunk in stride(from: 0, to: subBlocks, by: perChunk) {
                for t in 0..<((tokens + tileTokens - 1) / tileTokens) {
                    let firstToken = t * tileTokens
                    multiply(type, repacked, tileBytes: tileBytes, tile: t, validTokens: min(tileTokens, tokens - firstToken),
                             subBlocks: chunk..<min(subBlocks, chunk + perChunk), accumulate: chunk > 0,
                             into: product.y + firstToken * product.rows + first, masks: masks)
                }
            }
        }

        /// `count` rows into a tile with `path`'s repacking (all three write the same bytes).
        func repack(_ type: UInt32, _ rows: UnsafeRawPointer, rowBytes: Int, count: Int, into tile: UnsafeMutableRawPointer) {
            switch path {
            case .avx512vnni:
                #if arch(x86_64)
                TileRepacking.repack(type: type, rows: rows, rowBytes: rowBytes, count: count, columns: columns, into: tile)
                #else
                preconditionFailure("no AVX-512 kernels on this architecture")
                #endif
            case .avx2:
                QuantizedKernelsAVX2.TileKernels.repack(type: type, rows: rows, rowBytes: rowBytes, count: count, columns: columns, into: tile)
            case .portable:
                QuantizedKernels.TileKernels.repack(type: type, rows: rows, rowBytes: rowBytes, count: count, columns: columns, into: tile)
            }
        }

        /// One token tile times both row tiles with `path`'s products.
        func multiply(_ type: UInt32, _ repacked: UnsafeRawPointer, tileBytes: Int, tile: Int, validTokens: Int, subBlocks: Range<Int>,
                      accumulate: Bool, into y: UnsafeMutablePointer<Float>, masks: (UInt16, UInt16)) {
            let subBlock = QuantizedKernels.TileKernels.subBlock(type)
            switch path {
            case .avx512vnni:
                #if arch(x86_64)
                TileProducts.multiply(repacked: repacked, tileBytes: tileBytes, subBlock: subBlock, sums: TileRepacking.sums(type),
                                      activations: activations.vnni, tile: tile, validTokens: validTokens, subBlocks: subBlocks,
                                      accumulate: accumulate, into: y, stride: product.rows, masks: masks)
                #else
                preconditionFailure("no AVX-512 kernels on this architecture")
                #endif
            case .avx2:
                QuantizedKernelsAVX2.TileKernels.multiply(
                    repacked: repacked, tileBytes: tileBytes, subBlock: subBlock, sums: QuantizedKernelsAVX2.TileKernels.sums(type),
                    activations: activations.avx2, tile: tile, validTokens: validTokens, subBlocks: subBlocks, accumulate: accumulate,
                    into: y, stride: product.rows, masks: masks)
            case .portable:
                QuantizedKernels.TileKernels.multiply(
                    repacked: repacked, tileBytes: tileBytes, subBlock: subBlock, sums: QuantizedKernels.TileKernels.sums(type),
                    activations: activations.portable, tile: tile, validTokens: validTokens, subBlocks: subBlocks, accumulate: accumulate,
                    into: y, stride: product.rows, masks: masks)
            }
        }
    }
}
