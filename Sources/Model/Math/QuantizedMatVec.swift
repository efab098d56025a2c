import Foundation
import QuantizedKernels
import QuantizedKernelsAVX2
import QuantizedKernelsAVX512

/// y (rows) = W (rows, columns) · x (columns) straight from GGML's quantized blocks, for single-token decode.
///
/// Decoding one token touches every weight once, so its speed is the speed of reading them (Q4_1 blocks are a
/// sixth of the f32 matrix) and of unpacking them. As llama.cpp does, x is first rounded to 8 bits per group
/// of 32 values (step = max |x| / 127, q = round(x / step)); each group's dot product is then a sum of
/// integer products, scaled once by (weight scale · step) (`QuantizedRows`). The weights are exactly the values
/// `Dequantize` produces; x is not: each value moves by at most half its group's step, which bounds the
/// difference from the f32 product (the tests state the bound).
///
/// Rows are cut into fixed tasks of `rowsPerTask` shared by `DecodeTeam`; a row's sum is computed the same way
/// whoever computes it, so the result does not depend on the thread count at all. Matrices that read the same
/// x go to the team together (`multiply(_:columns:x:)`): one rounding of x and one hand-off for all of them.
public enum QuantizedMatVec {
    /// Which compilation of the row kernels runs: `avx512vnni` where the CPU has AVX-512 with VNNI (`VNNIRows`
    /// for the 32-value block types, `VNNISuperBlockRows` for Q4_K, Q5_K and Q6_K, the `avx2` kernels for the
    /// others), `avx2` where it has AVX2 and F16C (that
    /// compilation converts halves with it and multiplies bytes with `vpmaddubsw`), else `portable` (the
    /// architecture's baseline). `ADAPT_QUANTIZED_KERNELS=avx2` or `=portable` forces one of the latter. All
    /// three give the same bits.
    enum Path: String, Sendable, CaseIterable {
        case avx512vnni, avx2, portable
    }

    static let environmentVariable = "ADAPT_QUANTIZED_KERNELS"

    static let path: Path = {
        switch ProcessInfo.processInfo.environment[environmentVariable] {
        case "portable": return .portable
        case "avx2": return hasAVX2 ? .avx2 : .portable
        default: return hasVNNI ? .avx512vnni : hasAVX2 ? .avx2 : .portable
        }
    }()

    /// Whether this CPU runs `VNNIRows` (the prompt kernels' AVX-512 subsets).
    static var hasVNNI: Bool { hasAVX2 && QuantizedMatMul.hasVNNI }

    /// Whether this CPU runs the `avx2` compilation (built with FMA too, for the prompt's tile products).
    static var hasAVX2: Bool {
        #if arch(x86_64)
        let flags = BLASCoreType.cpuFlags()
        return flags.contains("avx2") && flags.contains("f16c") && flags.contains("fma")
        #else
        return false
        #endif
    }

    /// The name recorded beside `BLASArithmetic.kernels`: `int8-avx512vnni`, `int8-avx2` or
    /// `int8-portable-<architecture>`.
    static var kernelName: String { name(of: path) }

    static func name(of path: Path) -> String {
        switch path {
        case .avx512vnni: return "int8-avx512vnni"
        case .avx2: return "int8-avx2"
        case .portable: return "int8-portable-\(BLASArithmetic.architecture)"
        }
    }

    static let rowsPerTask = 32

    static func supports(_ type: GGMLType) -> Bool { QuantizedKernels.QuantizedRows.types.contains(type.rawValue) }

    static func multiply(_ type: GGMLType, blocks: UnsafeRawPointer, rows: Int, columns: Int,
                         x: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>, workers requested: Int? = nil,
                         path: Path = path) {
        multiply([Product(type: type, blocks: blocks, rows: rows, y: y)], columns: columns, x: x, workers: requested, path: path)
    }

    /// One matrix of a product set: `rows` rows of `type` blocks, `columns` wide, whose result y (rows) goes to `y`.
    struct Product {
        let type: GGMLType
        let blocks: UnsafeRawPointer
        let rows: Int
        let y: UnsafeMutablePointer<Float>
    }

    /// yᵢ = Wᵢ · x for matrices that read the same x (q, k and v; gate and up): x is rounded once and the rows of
    /// all of them make one task list, one hand-off to the team. Each row comes out as it would alone.
    static func multiply(_ products: [Product], columns: Int, x: UnsafePointer<Float>, workers requested: Int? = nil,
                         path: Path = path) {
        precondition(products.allSatisfy { columns % $0.type.blockSize == 0 && supports($0.type) })
        let groups = columns / 32
        withUnsafeTemporaryAllocation(byteCount: QuantizedKernels.QuantizedActivations.groupBytes * groups, alignment: 64) { values in
            withUnsafeTemporaryAllocation(of: Float.self, capacity: groups) { scales in
                withUnsafeTemporaryAllocation(of: Int32.self, capacity: 2 * groups) { halfSums in
                  withUnsafeTemporaryAllocation(of: Float.self, capacity: groups) { sums in
                   withUnsafeTemporaryAllocation(of: Int8.self, capacity: 32 * groups) { bytes in
                    quantize(x, groups: groups, values: values.baseAddress!, scales: scales.baseAddress!,
                             halfSums: halfSums.baseAddress!, sums: sums.baseAddress!, bytes: bytes.baseAddress!)
                    let activations = QuantizedKernels.QuantizedActivations(values: UnsafeRawPointer(values.baseAddress!), scales: scales.baseAddress!,
                                                                            halfSums: halfSums.baseAddress!, sums: sums.baseAddress!,
                                                                            bytes: bytes.baseAddress!)
                    let jobs = products.map { product in
                        Job(type: product.type.rawValue, path: path, y: product.y, activations: activations,
                            matrix: QuantizedKernels.QuantizedMatrix(blocks: product.blocks, rowBytes: columns / product.type.blockSize * product.type.blockBytes,
                                                                     groups: groups),
                            rows: product.rows)
                    }
                    // Tasks of `rowsPerTask` rows, matrix after matrix; firstTasks[i] is matrix i's first.
                    var firstTasks = [0]
                    for product in products { firstTasks.append(firstTasks.last! + (product.rows + rowsPerTask - 1) / rowsPerTask) }
                    // Small products are not worth waking a thread for.
                    let rows = products.reduce(0) { $0 + $1.rows }
                    let workers = requested ?? (rows * columns >= 1 << 16 ? BLAS.threads : 1)
                    // Buffers, not arrays, inside the tasks: no reference count shared across threads.
                    jobs.withUnsafeBufferPointer { jobs in
                        firstTasks.withUnsafeBufferPointer { firstTasks in
                            DecodeTeam.forEachTask(firstTasks.last!, members: workers) { task in
                                var i = 0
                                while task >= firstTasks[i + 1] { i += 1 }
                                let first = (task - firstTasks[i]) * rowsPerTask
                                jobs[i].compute(first..<min(jobs[i].rows, first + rowsPerTask))
                            }
                        }
                    }
                   }
                  }
                }
            }
        }
    }

    /// What the tasks share. Unchecked because it carries raw pointers: every pointee outlives the
    /// `forEachTask` call that uses it (it returns when all tasks are done), the inputs are only read, and each
    /// task writes only its own rows of `y`.
    struct Job: @unchecked Sendable {
        let type: UInt32
        let path: Path
        let y: UnsafeMutablePointer<Float>
        let activations: QuantizedKernels.QuantizedActivations
        let matrix: QuantizedKernels.QuantizedMatrix
        let rows: Int

        func compute(_ rows: Range<Int>) {
            switch path {
            case .avx512vnni:
                #if arch(x86_64)
                if VNNIRows.compute(type: type, blocks: matrix.blocks, rowBytes: matrix.rowBytes, groups: matrix.groups, rows: rows,
                                    steps: activations.scales, sums: activations.sums, bytes: activations.bytes, into: y) { return }
                if VNNISuperBlockRows.compute(type: type, blocks: matrix.blocks, rowBytes: matrix.rowBytes, groups: matrix.groups, rows: rows,
                                              steps: activations.scales, halfSums: activations.halfSums, bytes: activations.bytes,
                                              into: y) { return }
                #endif
                Job(type: type, path: .avx2, y: y, activations: activations, matrix: matrix, rows: self.rows).compute(rows)
            case .avx2:
                QuantizedKernelsAVX2.QuantizedRows.compute(
                    type: type, matrix: QuantizedKernelsAVX2.QuantizedMatrix(blocks: matrix.blocks, rowBytes: matrix.rowBytes, groups: matrix.groups),
                    rows: rows,
                    activations: QuantizedKernelsAVX2.QuantizedActivations(values: activations.values, scales: activations.scales,
                                                                           halfSums: activations.halfSums, sums: activations.sums,
                                                                           bytes: activations.bytes),
                    into: y)
            case .portable:
                QuantizedKernels.QuantizedRows.compute(type: type, matrix: matrix, rows: rows, activations: activations, into: y)
            }
        }
    }

    /// x rounded to 8 bits per group of 32 in `QuantizedActivations`' layouts (`values` and `bytes`), as llama.cpp's AVX2
    /// `quantize_row_q8_0`/`q8_1` round it: q = round-half-even(x · 127 / max |x|), and the step kept as an f16
    /// of max |x| / 127 (Q8_1's Σ x̂ likewise: an f16 of the unrounded step · Σ q). Reading the values llama.cpp
    /// reads keeps greedy decoding on llama.cpp's path.
    static func quantize(_ x: UnsafePointer<Float>, groups: Int, values: UnsafeMutableRawPointer, scales: UnsafeMutablePointer<Float>,
                         halfSums: UnsafeMutablePointer<Int32>, sums: UnsafeMutablePointer<Float>, bytes: UnsafeMutablePointer<Int8>) {
        // Eight lanes at a time; every step is exact or rounds as the scalar operation does, so the values are
        // those of the element-by-element loop this replaces (the tests compare with llama.cpp's rounding).
        typealias Eight = SIMD8<Float>
        @inline(__always) func magnitude(_ v: Eight) -> Eight {
            unsafeBitCast(unsafeBitCast(v, to: SIMD8<UInt32>.self) & 0x7FFF_FFFF, to: Eight.self)
        }
        // Adding 1.5 · 2²³ rounds half to even any |v| < 2²² (here |v| ≤ 127, plus a rounding) and leaves the
        // integer in the low bits of the sum: its bit pattern is 0x4B40_0000 + the integer.
        let shifter = Eight(repeating: 0x1.8p23)
        for g in 0..<groups {
            let raw = UnsafeRawPointer(x + 32 * g)
            let xs = (raw.loadUnaligned(as: Eight.self), raw.loadUnaligned(fromByteOffset: 32, as: Eight.self),
                      raw.loadUnaligned(fromByteOffset: 64, as: Eight.self), raw.loadUnaligned(fromByteOffset: 96, as: Eight.self))
            let m = (magnitude(xs.0), magnitude(xs.1), magnitude(xs.2), magnitude(xs.3))
            let infinity = Eight(repeating: .infinity)
            // NaN compares false, so a NaN or an infinity anywhere clears `finite`.
            let finite = all((m.0 .< infinity) .& (m.1 .< infinity) .& (m.2 .< infinity) .& (m.3 .< infinity))
            let out = (values + QuantizedKernels.QuantizedActivations.groupBytes * g).assumingMemoryBound(to: Int16.self)
            // The ones the kernels widen with (`QuantizedActivations`).
            (out + 32).initialize(repeating: 1, count: 16)
            guard finite else {
                // A NaN step makes the group's products NaN, as the f32 product would be; no value can be rounded.
                for i in 0..<32 { out[i] = 0; bytes[32 * g + i] = 0 }
                (scales[g], sums[g], halfSums[2 * g], halfSums[2 * g + 1]) = (.nan, .nan, 0, 0)
                continue
            }
            let wider = m.0.replacing(with: m.1, where: m.1 .> m.0), widest = m.2.replacing(with: m.3, where: m.3 .> m.2)
            let largest = wider.replacing(with: widest, where: widest .> wider).max()
            let inverse = Eight(repeating: largest == 0 ? 0 : 127 / largest)
            @inline(__always) func rounded(_ v: Eight) -> SIMD8<Int16> {
                SIMD8<Int16>(truncatingIfNeeded: unsafeBitCast(v * inverse + shifter, to: SIMD8<Int32>.self) &- 0x4B40_0000)
            }
            let q = SIMD32<Int16>(lowHalf: SIMD16(lowHalf: rounded(xs.0), highHalf: rounded(xs.1)),
                                  highHalf: SIMD16(lowHalf: rounded(xs.2), highHalf: rounded(xs.3)))
            UnsafeMutableRawPointer(out).storeBytes(of: q.evenHalf, as: SIMD16<Int16>.self)
            UnsafeMutableRawPointer(out).storeBytes(of: q.oddHalf, toByteOffset: 32, as: SIMD16<Int16>.self)
            // Sixteen at a time: the 32-lane conversion went through the stack value by value.
            let out8 = UnsafeMutableRawPointer(bytes + 32 * g)
            out8.storeBytes(of: SIMD16<Int8>(truncatingIfNeeded: q.lowHalf), as: SIMD16<Int8>.self)
            out8.storeBytes(of: SIMD16<Int8>(truncatingIfNeeded: q.highHalf), toByteOffset: 16, as: SIMD16<Int8>.self)
            let low = SIMD16<Int32>(truncatingIfNeeded: q.lowHalf).wrappedSum()
            let high = SIMD16<Int32>(truncatingIfNeeded: q.highHalf).wrappedSum()
            let step = largest / 127
            scales[g] = roundedToHalf(step)
            sums[g] = roundedToHalf(step * Float(low + high))
            halfSums[2 * g] = low
            halfSums[2 * g + 1] = high
        }
    }

    /// The float nearest to `value` that an f16 holds (round to nearest even, as F16C's conversion).
    static func roundedToHalf(_ value: Float) -> Float { Float(Float16(value)) }

    /// The same product from dequantized values with a Double accumulator: the test oracle.
    static func reference(_ type: GGMLType, blocks: UnsafeRawBufferPointer, rows: Int, columns: Int, x: [Float]) -> [Float] {
        let w = Dequantize.toFloat(blocks, type: type, count: rows * columns)
        return (0..<rows).map { r in Float((0..<columns).reduce(0.0) { $0 + Double(w[r * columns + $1]) * Double(x[$1]) }) }
    }
}
