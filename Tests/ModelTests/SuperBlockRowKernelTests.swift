import AdaptCore
import Foundation
@testable import Model
import QuantizedKernels
#if arch(x86_64)
import QuantizedKernelsAVX512
#endif
import Testing

/// The AVX-512 VNNI decode rows of Q4_K, Q5_K and Q6_K (`VNNISuperBlockRows`) give the bits of the AVX2 and portable
/// kernels: generation, scoring and replay read decode's bits, and must read the same ones on every CPU.
struct SuperBlockRowKernelTests {
    static let types: [GGMLType] = [.q4_K, .q5_K, .q6_K]

    /// The f16 fields of each super-block type: d and dmin of Q4_K and Q5_K, d of Q6_K.
    static let halfFields: [GGMLType: [Int]] = [.q4_K: [0, 2], .q5_K: [0, 2], .q6_K: [208]]

    /// Scales at the edges of f16: zero, both signs of the smallest and largest subnormal and of the largest
    /// finite value, one, and ordinary small ones.
    static let edgeHalves: [UInt16] = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x83FF, 0x7BFF, 0xFBFF, 0x3C00, 0x1E00, 0x9E00]

    /// Random bytes in every field, the f16 fields drawn from `edgeHalves` half of the time and from small normal
    /// values otherwise; Q6_K's 8-bit scales keep their random bytes (−128 to 127).
    static func blocks(_ type: GGMLType, rows: Int, columns: Int, seed: UInt64) -> [UInt8] {
        var state = seed | 1
        func next() -> UInt64 {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return state
        }
        let count = rows * columns / type.blockSize
        var bytes = (0..<(count * type.blockBytes)).map { _ in UInt8(truncatingIfNeeded: next()) }
        for b in 0..<count {
            for offset in halfFields[type]! {
                let bits = next() % 2 == 0 ? edgeHalves[Int(next() % UInt64(edgeHalves.count))]
                    : Float16(Float(next() % 1000 + 1) * 1e-4 * (next() % 2 == 0 ? 1 : -1)).bitPattern
                bytes[b * type.blockBytes + offset] = UInt8(bits & 0xFF)
                bytes[b * type.blockBytes + offset + 1] = UInt8(bits >> 8)
            }
        }
        return bytes
    }

    /// Activations with a group of zeros (step 0), a group with one huge value, tiny values and ordinary ones.
    static func activations(columns: Int, seed: UInt64) -> [Float] {
        let rng = CounterRNG(seed: seed)
        return (0..<columns).map { i in
            let v = Float(rng.normal(.test, step: 9, index: UInt32(i)))
            switch i / 32 % 4 {
            case 1: return 0
            case 2: return i % 32 == 5 ? 3e4 : v
            case 3: return v * 1e-30
            default: return v * (i % 37 == 0 ? 50 : 1)
            }
        }
    }

    static func run(_ type: GGMLType, _ bytes: [UInt8], rows: Int, columns: Int, x: [Float], path: QuantizedMatVec.Path,
                    workers: Int = 1) -> [UInt32] {
        var y = [Float](repeating: 0, count: rows)
        bytes.withUnsafeBytes { raw in
            x.withUnsafeBufferPointer { xp in
                QuantizedMatVec.multiply(type, blocks: raw.baseAddress!, rows: rows, columns: columns, x: xp.baseAddress!,
                                         into: &y, workers: workers, path: path)
            }
        }
        return y.map(\.bitPattern)
    }

    /// Odd row counts (tasks of 32 rows end short) and one to five super-blocks a row.
    @Test(arguments: types)
    func theVNNIKernelGivesTheBitsOfEveryOtherPathAtEdgeScales(type: GGMLType) throws {
        try #require(QuantizedMatVec.hasVNNI, "needs a CPU with AVX-512 VNNI to run its kernels")
        for (columns, rows) in [(256, 37), (512, 1), (768, 65), (1280, 3)] {
            let bytes = Self.blocks(type, rows: rows, columns: columns, seed: UInt64(columns + rows))
            let x = Self.activations(columns: columns, seed: UInt64(columns))
            let portable = Self.run(type, bytes, rows: rows, columns: columns, x: x, path: .portable)
            let label = "\(type.name), \(rows) rows of \(columns)"
            #expect(Self.run(type, bytes, rows: rows, columns: columns, x: x, path: .avx2) == portable, "AVX2, \(label)")
            #expect(Self.run(type, bytes, rows: rows, columns: columns, x: x, path: .avx512vnni) == portable, "AVX-512 VNNI, \(label)")
            #expect(Self.run(type, bytes, rows: rows, columns: columns, x: x, path: .avx512vnni, workers: 2) == portable,
                    "AVX-512 VNNI at 2 threads, \(label)")
            #expect(portable.contains { Float(bitPattern: $0).isFinite && $0 != 0 }, "\(label): some row is finite and not zero")
        }
    }

    #if arch(x86_64)
    /// The kernel called directly on row ranges that start and end anywhere writes exactly those rows, each with
    /// the bits the AVX2 kernel gives it.
    @Test(arguments: types)
    func theVNNIKernelComputesAnyRowRangeAndOnlyIt(type: GGMLType) throws {
        try #require(QuantizedMatVec.hasVNNI, "needs a CPU with AVX-512 VNNI to run its kernels")
        let rows = 23, columns = 512, groups = columns / 32
        let bytes = Self.blocks(type, rows: rows, columns: columns, seed: 41)
        let x = Self.activations(columns: columns, seed: 43)
        let expected = Self.run(type, bytes, rows: rows, columns: columns, x: x, path: .avx2)
        // x rounded as `multiply` rounds it.
        var values = [UInt8](repeating: 0, count: QuantizedActivations.groupBytes * groups)
        var steps = [Float](repeating: 0, count: groups), sums = [Float](repeating: 0, count: groups)
        var halfSums = [Int32](repeating: 0, count: 2 * groups), quantized = [Int8](repeating: 0, count: columns)
        x.withUnsafeBufferPointer { xp in
            QuantizedMatVec.quantize(xp.baseAddress!, groups: groups, values: &values, scales: &steps, halfSums: &halfSums, sums: &sums,
                                     bytes: &quantized)
        }
        for range in [0..<1, 3..<10, 5..<6, 7..<23, 0..<23, 22..<23] {
            var y = [Float](repeating: .infinity, count: rows)
            let done = bytes.withUnsafeBytes { raw in
                VNNISuperBlockRows.compute(type: type.rawValue, blocks: raw.baseAddress!, rowBytes: columns / 256 * type.blockBytes,
                                           groups: groups, rows: range, steps: steps, halfSums: halfSums, bytes: quantized, into: &y)
            }
            #expect(done)
            for r in 0..<rows {
                if range.contains(r) {
                    #expect(y[r].bitPattern == expected[r], "\(type.name) rows \(range): row \(r)")
                } else {
                    #expect(y[r] == .infinity, "\(type.name) rows \(range): row \(r) outside the range was written")
                }
            }
        }
    }

    /// The decode path on this CPU runs the VNNI kernel for the super-block types, and no other type falls into it.
    @Test func theVNNIKernelTakesExactlyTheSuperBlockTypesItHas() {
        #expect(VNNISuperBlockRows.types == [GGMLType.q4_K.rawValue, GGMLType.q5_K.rawValue, GGMLType.q6_K.rawValue])
        var y: Float = 0
        let refused = VNNISuperBlockRows.compute(type: GGMLType.q3_K.rawValue, blocks: UnsafeRawPointer(bitPattern: 64)!, rowBytes: 110,
                                                 groups: 8, rows: 0..<1, steps: [Float](repeating: 1, count: 8),
                                                 halfSums: [Int32](repeating: 0, count: 16), bytes: [Int8](repeating: 0, count: 256), into: &y)
        #expect(!refused && y == 0)
    }
    #endif
}
