import Foundation
import Model
import Testing

/// Every expected value below was worked out by hand from the block layouts in ggml-common.h.
struct DequantizeTests {
    func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }

    func dequantize(_ bytes: [UInt8], _ type: GGMLType, _ count: Int) -> [Float] {
        bytes.withUnsafeBytes { Dequantize.toFloat($0, type: type, count: count) }
    }

    @Test func f32IsReadLittleEndian() {
        // 1.0 = 0x3F800000, -2.5 = 0xC0200000
        let bytes: [UInt8] = [0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x20, 0xC0]
        #expect(dequantize(bytes, .f32, 2) == [1.0, -2.5])
    }

    @Test func f16CoversNormalsSubnormalsAndTheLargestValue() {
        let bytes = [0x3C00, 0xC000, 0x3555, 0x7BFF, 0x0001, 0x8000].flatMap { le16(UInt16($0)) }
        let values = dequantize(bytes, .f16, 6)
        #expect(values[0] == 1.0)
        #expect(values[1] == -2.0)
        #expect(values[2] == 0.333251953125)     // 1.0101010101b × 2^-2
        #expect(values[3] == 65504)
        #expect(values[4] == 0x1p-24)            // smallest subnormal
        #expect(values[5] == 0 && values[5].sign == .minus)
    }

    @Test func bf16IsTheUpperHalfOfAnF32() {
        let bytes = [0x3F80, 0xC040, 0x4049].flatMap { le16(UInt16($0)) }
        #expect(dequantize(bytes, .bf16, 3) == [1.0, -3.0, 3.140625])
    }

    @Test func q8_0MultipliesEachInt8ByItsBlockScale() {
        // Block 0: d = 0.5 (f16 0x3800), q[j] = j − 16. Block 1: d = −2 (0xC000), q[j] = 127 for even j, −128 for odd.
        var bytes = le16(0x3800) + (0..<32).map { UInt8(bitPattern: Int8($0 - 16)) }
        bytes += le16(0xC000) + (0..<32).map { $0 % 2 == 0 ? UInt8(127) : UInt8(bitPattern: -128) }
        let values = dequantize(bytes, .q8_0, 64)
        #expect(values[0] == -8.0)       // −16 × 0.5
        #expect(values[16] == 0.0)
        #expect(values[31] == 7.5)       // 15 × 0.5
        #expect(values[32] == -254.0)    // 127 × −2
        #expect(values[33] == 256.0)     // −128 × −2
        #expect(values[63] == 256.0)
        for j in 0..<32 { #expect(values[j] == Float(j - 16) * 0.5) }
    }

    @Test func q4_0PutsLowNibblesFirstAndHighNibblesInTheSecondHalf() {
        // d = 0.25 (0x3400); byte j = 0x?? with low nibble j and high nibble 15 − j.
        let bytes = le16(0x3400) + (0..<16).map { UInt8($0) | UInt8(15 - $0) << 4 }
        let values = dequantize(bytes, .q4_0, 32)
        #expect(values[0] == -2.0)      // (0 − 8) × 0.25
        #expect(values[8] == 0.0)       // (8 − 8) × 0.25
        #expect(values[15] == 1.75)     // (15 − 8) × 0.25
        #expect(values[16] == 1.75)     // high nibble of byte 0 is 15
        #expect(values[31] == -2.0)     // high nibble of byte 15 is 0
        for j in 0..<16 {
            #expect(values[j] == Float(j - 8) * 0.25)
            #expect(values[j + 16] == Float(7 - j) * 0.25)
        }
    }

    @Test func q4_1AddsTheBlockMinimum() {
        // d = 0.5 (0x3800), m = −1 (0xBC00), every byte 0x3A: low nibble 10, high nibble 3.
        let bytes = le16(0x3800) + le16(0xBC00) + [UInt8](repeating: 0x3A, count: 16)
        let values = dequantize(bytes, .q4_1, 32)
        #expect(values[0..<16].allSatisfy { $0 == 4.0 })    // 10 × 0.5 − 1
        #expect(values[16..<32].allSatisfy { $0 == 0.5 })   // 3 × 0.5 − 1
    }

    @Test func quantizersRoundTripValuesOnTheirGridExactly() {
        // Values chosen to sit exactly on each format's grid, so quantize → dequantize returns them unchanged.
        let q8: [Float] = (0..<32).map { (j: Int) -> Float in Float(j == 0 ? -127 : j * 3 - 50) * 0.5 }
        let q40: [Float] = (0..<32).map { (j: Int) -> Float in Float(j % 16 - 8) * 0.25 }
        let q41: [Float] = (0..<32).map { (j: Int) -> Float in -1 + 0.5 * Float(j % 16) }
        let cases: [([Float], GGMLType)] = [(q8, .q8_0), (q40, .q4_0), (q41, .q4_1)]
        for (values, type) in cases {
            let bytes = Quantize.bytes(values, as: type)
            #expect(bytes.count == type.blockBytes)
            #expect(dequantize(bytes, type, 32) == values, "\(type.name)")
        }
        // Q4_1's stored bytes for that block: d = 0.5, m = −1, nibbles j | j << 4.
        #expect(Quantize.bytes(q41, as: .q4_1) == le16(0x3800) + le16(0xBC00) + (0..<16).map { UInt8($0) | UInt8($0) << 4 })
    }

    @Test(arguments: [GGMLType.q8_0, .q4_0, .q4_1, .f16, .bf16])
    func quantizationErrorStaysWithinHalfAStep(type: GGMLType) {
        let values: [Float] = (0..<256).map { (i: Int) -> Float in
            let x = Double(i)
            return Float(sin(x * 0.37) * 3 + 0.1 * Double(i % 7))
        }
        let back = dequantize(Quantize.bytes(values, as: type), type, values.count)
        for b in 0..<(values.count / 32) {
            let block = values[(b * 32)..<(b * 32 + 32)]
            let lo = block.min()!, hi = block.max()!, amax = max(abs(lo), abs(hi))
            let step: Float
            switch type {
            case .q8_0: step = amax / 127
            case .q4_0: step = amax / 8
            case .q4_1: step = (hi - lo) / 15
            default: step = amax * Float(0x1p-7)   // bf16 keeps 8 significant bits, f16 11
            }
            for j in block.indices {
                // Half a step, plus the f16 rounding of the stored scale and minimum.
                #expect(abs(back[j] - values[j]) <= step * 0.5 + amax * 0x1p-9, "\(type.name) element \(j)")
            }
        }
    }
}
