import Foundation
@testable import Model
import Testing

struct BlockDequantizerTests {
    static let types: [GGMLType] = [.q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .q4_K, .q5_K, .q6_K]

    static var paths: [QuantizedMatVec.Path] { QuantizedMatVec.hasAVX2 ? [.avx2, .portable] : [.portable] }

    /// Where `values` differs from `expected`, NaN counting as equal to NaN (the reference builds a NaN scale
    /// with another payload than F16C does, and the payload is no value).
    static func differences(_ values: [Float], _ expected: [Float]) -> [Int] {
        values.indices.filter { values[$0].bitPattern != expected[$0].bitPattern && !(values[$0].isNaN && expected[$0].isNaN) }
    }

    static func convert(_ bytes: [UInt8], _ type: GGMLType, count: Int, path: QuantizedMatVec.Path) -> [Float] {
        var out = [Float](repeating: .infinity, count: count)
        bytes.withUnsafeBytes { raw in
            out.withUnsafeMutableBufferPointer { BlockDequantizer.convert(raw, type: type, count: count, into: $0.baseAddress!, path: path) }
        }
        return out
    }

    @Test(arguments: types)
    func eachTypeGivesTheReferenceBitsOnEveryPath(type: GGMLType) {
        #expect(BlockDequantizer.supports(type))
        let count = 4096
        let bytes = QuantizedMatVecTests.blocks(type, rows: 1, columns: count, seed: 29)
        let expected = bytes.withUnsafeBytes { Dequantize.toFloat($0, type: type, count: count) }
        for path in Self.paths {
            let differing = Self.differences(Self.convert(bytes, type, count: count, path: path), expected)
            #expect(differing.isEmpty, "\(type.name) on \(path): \(differing.count) values differ, first at \(differing.first ?? -1)")
        }
    }

    /// Scale and minimum run through every half bit pattern (subnormals, infinities, NaNs included), each block's
    /// nibbles different.
    @Test(arguments: [GGMLType.q4_1, .q5_1])
    func everyHalfScaleGivesTheReferenceBits(type: GGMLType) {
        let blocks = 1 << 16, size = type.blockBytes
        var bytes = [UInt8](repeating: 0, count: blocks * size)
        for b in 0..<blocks {
            bytes[size * b] = UInt8(b & 0xFF); bytes[size * b + 1] = UInt8(b >> 8)
            bytes[size * b + 2] = UInt8((b &* 7) & 0xFF); bytes[size * b + 3] = UInt8(((b &* 7) >> 8) & 0xFF)
            for i in 4..<size { bytes[size * b + i] = UInt8(truncatingIfNeeded: b &+ 37 &* i) }
        }
        let count = 32 * blocks
        let expected = bytes.withUnsafeBytes { Dequantize.toFloat($0, type: type, count: count) }
        #expect(expected.contains { $0.isNaN } && expected.contains { $0.isInfinite } && expected.contains { $0 != 0 && abs($0) < 0x1p-14 })
        for path in Self.paths {
            let differing = Self.differences(Self.convert(bytes, type, count: count, path: path), expected)
            #expect(differing.isEmpty, "\(type.name) on \(path): \(differing.count) values differ, first at \(differing.first ?? -1)")
        }
    }

    @Test func aTypeWithoutAVectorConversionFallsBackToTheReference() {
        #expect(!BlockDequantizer.supports(.iq4_xs))
        let count = 512
        let bytes = QuantizedModelLoadingTests.randomBlocks(.iq4_xs, elements: count, seed: 4)
        let expected = bytes.withUnsafeBytes { Dequantize.toFloat($0, type: .iq4_xs, count: count) }
        #expect(Self.differences(Self.convert(bytes, .iq4_xs, count: count, path: QuantizedMatVec.path), expected).isEmpty)
    }
}
