import AdaptCore
import Foundation
@testable import Model
import Testing

/// The tiled product of a base kept quantized (`QuantizedTileProduct`) multiplies exactly the dequantized
/// weights with the f32 activations: no 8-bit rounding of the activations enters it, so its only difference
/// from Σ w·x is f32 rounding. Whatever order sgemm sums a row in, k products and their sum stay within
/// γₖ · Σ |w·x| of the exact value (γₖ = k·u / (1 − k·u), u = 2⁻²⁴; Higham, Accuracy and Stability of
/// Numerical Algorithms, §3.1): the bound the tests use, per output value, with k the row's length.
struct QuantizedTileProductTests {
    static func gamma(_ k: Int) -> Double {
        let ku = Double(k) * 0x1p-24
        return ku / (1 - ku)
    }

    /// Y (n, rows) from the tiled product at `members` threads.
    static func product(_ type: GGMLType, blocks: UnsafeRawBufferPointer, rows: Int, columns: Int, x: [Float], n: Int,
                        members: Int) -> [Float] {
        var y = [Float](repeating: .nan, count: n * rows)
        x.withUnsafeBufferPointer { xp in
            y.withUnsafeMutableBufferPointer { yp in
                QuantizedTileProduct.multiply(type, blocks: blocks, rows: rows, columns: columns, x: xp.baseAddress!, count: n,
                                              into: yp.baseAddress!, ldy: rows, members: members)
            }
        }
        return y
    }

    /// Checks every value of the tiled product against Σ w·x in Double on the dequantized weights; returns the
    /// largest difference as a fraction of its bound.
    @discardableResult
    static func check(_ type: GGMLType, blocks: UnsafeRawBufferPointer, rows: Int, columns: Int, x: [Float], n: Int,
                      label: String) -> Double {
        let y = product(type, blocks: blocks, rows: rows, columns: columns, x: x, n: n, members: 1)
        let w = Dequantize.toFloat(blocks, type: type, count: rows * columns)
        var worst = 0.0
        for t in 0..<n {
            for r in 0..<rows {
                var exact = 0.0, magnitude = 0.0
                for c in 0..<columns {
                    let term = Double(w[r * columns + c]) * Double(x[t * columns + c])
                    exact += term
                    magnitude += abs(term)
                }
                let bound = gamma(columns) * magnitude
                let difference = abs(Double(y[t * rows + r]) - exact)
                #expect(difference <= bound, "\(label) token \(t) row \(r): \(y[t * rows + r]) against \(exact)")
                worst = max(worst, bound > 0 ? difference / bound : 0)
            }
        }
        return worst
    }

    static func activations(count: Int, seed: UInt64) -> [Float] {
        let rng = CounterRNG(seed: seed)
        // Normal values with a few large ones, as real activations have.
        return (0..<count).map { Float(rng.normal(.test, step: 2, index: UInt32($0))) * ($0 % 37 == 0 ? 20 : 1) }
    }

    /// 200 rows: several tiles and a last, shorter one; 7 tokens.
    @Test(arguments: QuantizedMatVecTests.allTypes)
    func eachTypesTiledProductIsWithinF32RoundingOfTheDequantizedProduct(type: GGMLType) {
        let (rows, columns, n) = (200, 512, 7)
        let bytes = QuantizedMatVecTests.blocks(type, rows: rows, columns: columns, seed: 3)
        let x = Self.activations(count: n * columns, seed: 5)
        bytes.withUnsafeBytes { _ = Self.check(type, blocks: $0, rows: rows, columns: columns, x: x, n: n, label: type.name) }
    }

    /// The default model's first block and the first rows of its embedding (the output projection).
    @Test(.enabled(if: RealModel.isPresent, RealModel.absentReason))
    func theTiledProductAgreesWithTheDequantizedProductOnRealTensors() throws {
        let file = try GGUFFile(url: RealModel.path)
        for info in file.tensors where info.dimensions.count == 2 && (info.name.hasPrefix("blk.0.") || info.name == "token_embd.weight") {
            let (columns, rows) = (info.dimensions[0], min(info.dimensions[1], 400))
            let x = Self.activations(count: 5 * columns, seed: 7)
            let bytes = UnsafeRawBufferPointer(rebasing: file.bytes(of: info)[..<(rows * columns / info.type.blockSize * info.type.blockBytes)])
            Self.check(info.type, blocks: bytes, rows: rows, columns: columns, x: x, n: 5, label: info.name)
        }
    }

    /// Each tile is one single-threaded sgemm into its own columns, cut by the shape alone: 1, 2 and 3 threads
    /// give the same bits.
    @Test(arguments: [GGMLType.q4_1, .q8_0, .q4_K, .q6_K])
    func theTiledProductRepeatsBitForBitAtOneTwoAndThreeThreads(type: GGMLType) {
        let (rows, columns, n) = (601, 256, 33)
        let bytes = QuantizedMatVecTests.blocks(type, rows: rows, columns: columns, seed: 4)
        let x = Self.activations(count: n * columns, seed: 4)
        bytes.withUnsafeBytes { raw in
            let one = Self.product(type, blocks: raw, rows: rows, columns: columns, x: x, n: n, members: 1).map(\.bitPattern)
            #expect(one == Self.product(type, blocks: raw, rows: rows, columns: columns, x: x, n: n, members: 1).map(\.bitPattern))
            #expect(one == Self.product(type, blocks: raw, rows: rows, columns: columns, x: x, n: n, members: 2).map(\.bitPattern))
            #expect(one == Self.product(type, blocks: raw, rows: rows, columns: columns, x: x, n: n, members: 2).map(\.bitPattern))
            #expect(one == Self.product(type, blocks: raw, rows: rows, columns: columns, x: x, n: n, members: 3).map(\.bitPattern))
        }
    }
}
