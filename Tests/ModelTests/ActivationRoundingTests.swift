import AdaptCore
import Foundation
@testable import Model
import QuantizedKernels
import Testing

struct ActivationRoundingTests {
    /// The element-by-element rounding the vector code must reproduce: q = round-half-even(x · 127 / max |x|) per
    /// group of 32, the step an f16 of max |x| / 127, a group with a NaN or an infinity all zeros and a NaN step.
    static func reference(_ x: [Float]) -> (values: [Int16], scales: [Float], sums: [Float], halfSums: [Int32], bytes: [Int8]) {
        var values: [Int16] = [], scales: [Float] = [], sums: [Float] = [], halfSums: [Int32] = [], bytes: [Int8] = []
        for g in 0..<(x.count / 32) {
            let group = x[(32 * g)..<(32 * g + 32)]
            var q = [Int16](repeating: 0, count: 32)
            guard group.allSatisfy(\.isFinite) else {
                values += q + [Int16](repeating: 1, count: 16)
                bytes += [Int8](repeating: 0, count: 32)
                scales.append(Float.nan); sums.append(Float.nan); halfSums += [0, 0]
                continue
            }
            let largest = group.map(abs).max()!
            let inverse = largest == 0 ? 0 : 127 / largest
            for (i, v) in group.enumerated() { q[i] = Int16((v * inverse).rounded(.toNearestOrEven)) }
            let low = q[0..<16].reduce(Int32(0)) { $0 + Int32($1) }, high = q[16..<32].reduce(Int32(0)) { $0 + Int32($1) }
            let laidOut: [Int16] = (0..<32).map { p in q[p % 16 * 2 + p / 16] }
            values += laidOut + [Int16](repeating: 1, count: 16)
            bytes += q.map { Int8($0) }
            let step: Float = largest / 127
            scales.append(Float(Float16(step)))
            sums.append(Float(Float16(step * Float(low + high))))
            halfSums += [low, high]
        }
        return (values, scales, sums, halfSums, bytes)
    }

    @Test func theActivationsAreRoundedAsTheElementLoopRoundsThem() {
        let rng = CounterRNG(seed: 17)
        var x: [Float] = (0..<(32 * 40)).map { i in
            let value = Float(rng.normal(.test, step: 3, index: UInt32(i)))
            return i % 29 == 0 ? 40 * value : value
        }
        // Ties: with a largest value of 127 each value is its own x · 127 / max, so k + 0.5 must round to even.
        for i in 0..<32 { x[i] = i == 0 ? 127 : Float(i % 9) - 4.5 }
        for i in 32..<64 { x[i] = 0 }
        x[70] = Float.nan
        x[100] = -.infinity
        x[130] = 3e38
        let groups = x.count / 32
        var values = [Int16](repeating: -7, count: groups * QuantizedActivations.groupBytes / 2)
        var scales = [Float](repeating: 0, count: groups), sums = [Float](repeating: 0, count: groups)
        var halfSums = [Int32](repeating: 0, count: 2 * groups)
        var bytes = [Int8](repeating: -7, count: 32 * groups)
        values.withUnsafeMutableBytes { v in
            QuantizedMatVec.quantize(x, groups: groups, values: v.baseAddress!, scales: &scales, halfSums: &halfSums, sums: &sums,
                                     bytes: &bytes)
        }
        let expected = Self.reference(x)
        #expect(values == expected.values)
        #expect(bytes == expected.bytes)
        #expect(halfSums == expected.halfSums)
        #expect(zip(scales, expected.scales).allSatisfy { $0.bitPattern == $1.bitPattern || ($0.isNaN && $1.isNaN) })
        #expect(zip(sums, expected.sums).allSatisfy { $0.bitPattern == $1.bitPattern || ($0.isNaN && $1.isNaN) })
        #expect(Array(values[0..<16]) == [127, -2, 0, 2, 4, -4, -2, 0, 2, -4, -2, 0, 2, 4, -4, -2],
                "the even elements of the tied group, each k + 0.5 rounded to the even neighbour")
    }
}
