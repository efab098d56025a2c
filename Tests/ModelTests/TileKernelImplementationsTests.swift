import AdaptCore
import Foundation
@testable import Model
import Testing

/// The three implementations of the int8 tile kernels (`int8-v1`) give the same bits: the AVX2 and the portable
/// ones against the AVX-512 VNNI ones, on random tiles of every type the tile kernels read, in shapes whose rows
/// and tokens end inside a tile and whose width spans several chunks of columns.
@Suite struct TileKernelImplementationsTests {
    static let flags = BLASCoreType.cpuFlags()
    static let hasVNNI = QuantizedMatMul.canRun(.avx512vnni, cpuFlags: flags)

    /// (rows, columns, tokens): tile edges in rows and tokens; 1536 columns make three chunks of Q8_0 tiles.
    static let shapes = [(37, 512, 11), (16, 256, 8), (5, 1536, 3), (70, 768, 13)]

    /// Y (tokens, rows) through `path`, as bit patterns (NaN as one pattern: the implementations need not agree
    /// on a NaN's payload, only on its being NaN).
    static func product(_ path: QuantizedMatMul.Path, _ type: GGMLType, blocks: UnsafeRawBufferPointer, rows: Int, columns: Int, x: [Float],
                        tokens: Int, workers: Int = 1) -> [UInt32] {
        var y = [Float](repeating: 0, count: tokens * rows)
        x.withUnsafeBufferPointer { xp in
            y.withUnsafeMutableBufferPointer { yp in
                QuantizedMatMul.multiply([QuantizedMatVec.Product(type: type, blocks: blocks.baseAddress!, rows: rows, y: yp.baseAddress!)],
                                         tokens: tokens, columns: columns, x: xp.baseAddress!, workers: workers, path: path)
            }
        }
        return y.map { $0.isNaN ? Float.nan.bitPattern : $0.bitPattern }
    }

    /// Activations with large values, a zero group and a group that is not finite.
    static func activations(tokens: Int, columns: Int, seed: UInt64) -> [Float] {
        var x = QuantizedMatMulTests.activations(tokens: tokens, columns: columns, seed: seed)
        for i in 0..<32 { x[columns + 32 + i] = 0 }
        if tokens > 2 { x[2 * columns + 5] = .infinity }
        return x
    }

    @Test(.enabled(if: hasVNNI, "compares with the AVX-512 VNNI kernels: needs a CPU with AVX-512 VNNI"),
          arguments: QuantizedMatMulTests.types)
    func theAVX2AndPortableKernelsGiveTheVNNIKernelsBits(type: GGMLType) {
        for (index, (rows, columns, tokens)) in Self.shapes.enumerated() {
            let bytes = QuantizedMatVecTests.blocks(type, rows: rows, columns: columns, seed: UInt64(20 + index))
            let x = Self.activations(tokens: tokens, columns: columns, seed: UInt64(40 + index))
            bytes.withUnsafeBytes { blocks in
                let vnni = Self.product(.avx512vnni, type, blocks: blocks, rows: rows, columns: columns, x: x, tokens: tokens)
                #expect(vnni.contains { Float(bitPattern: $0).isFinite && $0 != 0 }, "\(type.name) \(rows)×\(columns): no product computed")
                for path in [QuantizedMatMul.Path.avx2, .portable] where QuantizedMatMul.canRun(path, cpuFlags: Self.flags) {
                    let other = Self.product(path, type, blocks: blocks, rows: rows, columns: columns, x: x, tokens: tokens, workers: 2)
                    let differing = zip(vnni, other).filter { $0 != $1 }.count
                    #expect(differing == 0, "\(type.name) \(rows)×\(columns)×\(tokens) tokens: \(path) differs from VNNI in \(differing) outputs")
                }
            }
        }
    }

    /// Each implementation rounds a prompt's activations into the same bytes and floats.
    @Test(.enabled(if: hasVNNI, "compares with the AVX-512 VNNI rounding: needs a CPU with AVX-512 VNNI"))
    func everyImplementationRoundsActivationsIntoTheSameTiles() {
        let (tokens, columns) = (13, 256)
        let x = Self.activations(tokens: tokens, columns: columns, seed: 7)
        func tiles(_ path: QuantizedMatMul.Path) -> ([UInt32], [UInt32]) {
            let prompt = x.withUnsafeBufferPointer { PromptActivations($0.baseAddress!, tokens: tokens, columns: columns, path: path) }
            defer { prompt.deallocate() }
            let t = prompt.tiles, count = (tokens + 7) / 8
            let words = (0..<(count * t.tileWords)).map { t.bytes[$0] }
            // The 32-column arrays fill the first half of each tile's stride; the rest is never written or read.
            let floats = [(t.steps32, 2), (t.steps16, 1), (t.sums32, 2), (t.roundedSums32, 2), (t.sums16, 1)].flatMap { array, share in
                (0..<(count * t.tileFloats)).filter { $0 % t.tileFloats < t.tileFloats / share }
                    .map { array[$0].isNaN ? Float.nan.bitPattern : array[$0].bitPattern }
            }
            return (words, floats)
        }
        let vnni = tiles(.avx512vnni)
        for path in [QuantizedMatMul.Path.avx2, .portable] where QuantizedMatMul.canRun(path, cpuFlags: Self.flags) {
            let other = tiles(path)
            #expect(other.0 == vnni.0, "\(path): bytes")
            #expect(other.1 == vnni.1, "\(path): steps and sums")
        }
    }

    /// `ADAPT_PROMPT_KERNELS` picks the implementation; one the CPU lacks gives way to the fastest it has.
    @Test func thePromptKernelsSwitchPicksTheImplementationAsked() {
        let vnni: Set<String> = ["avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni"]
        let avx2: Set<String> = ["avx2", "fma", "f16c"]
        #if arch(x86_64)
        #expect(QuantizedMatMul.path(asked: nil, cpuFlags: vnni) == .avx512vnni)
        #expect(QuantizedMatMul.path(asked: nil, cpuFlags: avx2) == .avx2)
        #expect(QuantizedMatMul.path(asked: "avx2", cpuFlags: vnni) == .avx2)
        #expect(QuantizedMatMul.path(asked: "avx512vnni", cpuFlags: avx2) == .avx2)
        #endif
        #expect(QuantizedMatMul.path(asked: nil, cpuFlags: ["sse2"]) == .portable)
        #expect(QuantizedMatMul.path(asked: "portable", cpuFlags: vnni) == .portable)
        #expect(QuantizedMatMul.path(asked: "avx2", cpuFlags: ["sse2"]) == .portable)
        #expect(QuantizedMatMul.path(asked: "sgemm", cpuFlags: vnni) == nil)
    }

    /// The arithmetic is recorded by what it computes, not by the instructions: every implementation is `int8-v1`,
    /// and the name records made before hold (`int8-avx512vnni`) is read as it.
    @Test func everyImplementationRecordsInt8V1AndTheOldNameReadsAsIt() throws {
        #expect(QuantizedMatMul.int8Name == "int8-v1")
        let old = BLASArithmetic(openblas: "OpenBLAS 0.3.21", coreType: "Haswell", threads: 1, kernels: "swift-simd-x86_64", pinned: true)
        var recordedBefore = old, now = old
        recordedBefore.forwardKernels = "int8-avx512vnni"
        now.forwardKernels = "int8-v1"
        #expect(recordedBefore.difference(from: now) == nil)
        #expect(recordedBefore.differingFields(from: now).isEmpty)
        var sgemm = old
        sgemm.forwardKernels = "sgemm"
        #expect(recordedBefore.difference(from: sgemm) == "forward products sgemm here, int8-v1 recorded")
    }
}
