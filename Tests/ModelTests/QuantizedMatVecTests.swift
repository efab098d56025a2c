import AdaptCore
@testable import Model
import Testing

struct QuantizedMatVecTests {
    /// The decode kernel against dequantize-then-multiply in Double: within 1e-5 of the largest |row|·|x| sum.
    @Test(arguments: [GGMLType.q4_0, .q4_1, .q8_0])
    func quantizedProductAgreesWithTheDequantizedOne(type: GGMLType) {
        let rows = 7, columns = 96
        let rng = CounterRNG(seed: 3)
        let w = (0..<(rows * columns)).map { Float(rng.normal(.test, step: 1, index: UInt32($0))) }
        let x = (0..<columns).map { Float(rng.normal(.test, step: 2, index: UInt32($0))) }
        let bytes = Quantize.bytes(w, as: type)
        var y = [Float](repeating: 0, count: rows)
        bytes.withUnsafeBytes { raw in
            x.withUnsafeBufferPointer { xp in
                QuantizedMatVec.multiply(type, blocks: raw.baseAddress!, rows: rows, columns: columns, x: xp.baseAddress!, into: &y)
            }
        }
        let expected = bytes.withUnsafeBytes { QuantizedMatVec.reference(type, blocks: $0, rows: rows, columns: columns, x: x) }
        let scale = w.map(abs).max()! * x.map(abs).reduce(0, +)
        for r in 0..<rows { #expect(abs(y[r] - expected[r]) <= 1e-5 * scale, "row \(r)") }
    }

    @Test func theResultDoesNotDependOnTheNumberOfWorkers() {
        let rows = 601, columns = 64
        let rng = CounterRNG(seed: 4)
        let w = (0..<(rows * columns)).map { Float(rng.normal(.test, step: 1, index: UInt32($0))) }
        let x = (0..<columns).map { Float(rng.normal(.test, step: 2, index: UInt32($0))) }
        let bytes = Quantize.bytes(w, as: .q4_1)
        let results = [1, 2, 3].map { workers -> [Float] in
            var y = [Float](repeating: 0, count: rows)
            bytes.withUnsafeBytes { raw in
                x.withUnsafeBufferPointer { xp in
                    QuantizedMatVec.multiply(.q4_1, blocks: raw.baseAddress!, rows: rows, columns: columns, x: xp.baseAddress!, into: &y, workers: workers)
                }
            }
            return y
        }
        #expect(results[0].map(\.bitPattern) == results[1].map(\.bitPattern))
        #expect(results[0].map(\.bitPattern) == results[2].map(\.bitPattern))
    }

    @Test func halfToFloatMatchesFloat16ForEveryBitPattern() {
        let mismatches = (0...UInt16.max).filter { bits in
            let expected = Float(Float16(bitPattern: bits))
            let actual = Dequantize.half(bits.littleEndian)
            return !(actual.bitPattern == expected.bitPattern || (actual.isNaN && expected.isNaN))
        }
        #expect(mismatches.isEmpty, "first mismatch: \(mismatches.first.map { String($0, radix: 16) } ?? "")")
    }
}
