/// Conversion between GGML's stored element types and f32.
///
/// Block layouts follow ggml-common.h; the formulas follow ggml-quants.c's reference (`*_ref`) routines:
/// - Q8_0: `d` (f16) then 32 int8 `q`; value = q·d.
/// - Q4_0: `d` (f16) then 16 bytes; byte j holds element j in its low nibble and element j+16 in its high
///   nibble; value = (nibble − 8)·d.
/// - Q4_1: `d` (f16), `m` (f16) then 16 bytes laid out as Q4_0; value = nibble·d + m.
/// - BF16: the upper half of an IEEE f32.
public enum Dequantize {
    /// `count` values of `type` from `source` as f32.
    public static func toFloat(_ source: UnsafeRawBufferPointer, type: GGMLType, count: Int) -> [Float] {
        [Float](unsafeUninitializedCapacity: count) { buffer, initialized in
            convert(source, type: type, count: count, into: buffer.baseAddress!)
            initialized = count
        }
    }

    /// Writes `count` values into `out`; `source` must hold `count / blockSize` blocks.
    public static func convert(_ source: UnsafeRawBufferPointer, type: GGMLType, count: Int, into out: UnsafeMutablePointer<Float>) {
        precondition(count % type.blockSize == 0 && source.count >= count / type.blockSize * type.blockBytes,
                     "source too small for \(count) \(type.name) values")
        guard count > 0, let src = source.baseAddress else { return }
        switch type {
        case .f32:
            for i in 0..<count { out[i] = Float(bitPattern: UInt32(littleEndian: src.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self))) }
        case .f16:
            for i in 0..<count { out[i] = half(src.loadUnaligned(fromByteOffset: 2 * i, as: UInt16.self)) }
        case .bf16:
            for i in 0..<count { out[i] = Float(bitPattern: UInt32(UInt16(littleEndian: src.loadUnaligned(fromByteOffset: 2 * i, as: UInt16.self))) << 16) }
        case .q8_0:
            for b in 0..<(count / 32) {
                let block = src + b * 34
                let d = half(block.loadUnaligned(as: UInt16.self))
                let q = (block + 2).assumingMemoryBound(to: Int8.self)
                let y = out + b * 32
                for j in 0..<32 { y[j] = Float(q[j]) * d }
            }
        case .q4_0:
            for b in 0..<(count / 32) {
                let block = src + b * 18
                let d = half(block.loadUnaligned(as: UInt16.self))
                let q = (block + 2).assumingMemoryBound(to: UInt8.self)
                let y = out + b * 32
                for j in 0..<16 {
                    y[j] = Float(Int(q[j] & 0x0F) - 8) * d
                    y[j + 16] = Float(Int(q[j] >> 4) - 8) * d
                }
            }
        case .q4_1:
            for b in 0..<(count / 32) {
                let block = src + b * 20
                let d = half(block.loadUnaligned(as: UInt16.self))
                let m = half(block.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
                let q = (block + 4).assumingMemoryBound(to: UInt8.self)
                let y = out + b * 32
                for j in 0..<16 {
                    y[j] = Float(q[j] & 0x0F) * d + m
                    y[j + 16] = Float(q[j] >> 4) * d + m
                }
            }
        }
    }

    /// IEEE half → float by bit manipulation: Float(Float16) compiles to a library call on baseline x86-64
    /// (no F16C), which dominated dequantization and decoding.
    @inline(__always)
    static func half(_ stored: UInt16) -> Float {
        let h = UInt32(UInt16(littleEndian: stored))
        let sign = (h & 0x8000) << 16
        let exponent = (h >> 10) & 0x1F
        let mantissa = h & 0x3FF
        if exponent == 0 {
            // Zero or subnormal: mantissa · 2⁻²⁴, exact in f32.
            let magnitude = Float(mantissa) * 0x1p-24
            return sign != 0 ? -magnitude : magnitude
        }
        if exponent == 31 { return Float(bitPattern: sign | 0x7F80_0000 | mantissa << 13) }
        return Float(bitPattern: sign | (exponent + 112) << 23 | mantissa << 13)
    }
}
