/// Conversion between GGML's stored element types and f32.
///
/// Block layouts follow ggml-common.h; the formulas follow ggml-quants.c's `dequantize_row_*`, with the products
/// in the same order (so the f32 results are the same bits as ggml's and gguf-py's numpy dequantizers). f16 fields
/// are IEEE halves, little-endian; `e` is an element's index in its block.
/// - Q8_0: `d` then 32 int8 `q`; value = q·d.
/// - Q4_0: `d` then 16 bytes; byte j holds element j in its low nibble and element j+16 in its high
///   nibble; value = (nibble − 8)·d.
/// - Q4_1: `d`, `m` then 16 bytes laid out as Q4_0; value = nibble·d + m.
/// - Q5_0 / Q5_1: `d` (and `m`), then `qh` (a u32 whose bit e is element e's fifth bit), then nibbles as Q4_0;
///   value = d·(q − 16), or d·q + m.
/// - IQ4_NL: as Q4_0, but value = d·K[nibble] with the non-linear codebook K (`iq4Values`).
/// - Q2_K: 16 scale bytes (low nibble scale, high nibble min, one per 16 elements), 64 bytes of 2-bit values,
///   `d`, `dmin`. Element e's bits are at byte 32·(e/128) + e%32, shifted by 2·((e/32)%4); value =
///   d·scale·q − dmin·min.
/// - Q3_K: `hmask` (32 bytes: bit e/32 of byte e%32 is element e's high bit), the 2-bit values as Q2_K, 12 bytes
///   of sixteen 6-bit scales (low nibbles in bytes 0–7, two high bits each in bytes 8–11), `d`; q = low bits − 4
///   when the high bit is clear; value = d·(scale − 32)·q.
/// - Q4_K / Q5_K: `d`, `dmin`, 12 bytes of eight 6-bit scales and mins (`scaleAndMin`), [Q5_K: 32 bytes `qh`, bit
///   e/32 of byte e%32], 128 bytes of nibbles: element e is the low (e%64 < 32) or high nibble of byte
///   32·(e/64) + e%32; value = d·scale·q − dmin·min with q the nibble [+ 16·high bit].
/// - Q6_K: 128 bytes `ql`, 64 bytes `qh`, 16 int8 scales, `d`. Element e = 128h + 32k + l: its low four bits
///   are the low (k < 2) or high nibble of ql[64h + 32·(k%2) + l], its high two bits (qh[32h + l] >> 2k) & 3;
///   value = d·scale[e/16]·(q − 32).
/// - IQ4_XS: `d`, u16 `scales_h`, 4 bytes `scales_l`, 128 bytes of nibbles. Sub-block j of 32 has the 6-bit scale
///   (nibble j of scales_l) | ((scales_h >> 2j) & 3) << 4; byte 16j + i holds element 32j + i (low nibble) and
///   32j + 16 + i (high); value = d·(scale − 32)·K[nibble].
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
        case .q5_0, .q5_1:
            let size = type.blockBytes
            let hasMinimum = type == .q5_1
            for b in 0..<(count / 32) {
                let block = src + b * size
                let d = half(block.loadUnaligned(as: UInt16.self))
                let m = hasMinimum ? half(block.loadUnaligned(fromByteOffset: 2, as: UInt16.self)) : 0
                let qhOffset = hasMinimum ? 4 : 2
                let qh = UInt32(littleEndian: block.loadUnaligned(fromByteOffset: qhOffset, as: UInt32.self))
                let q = (block + qhOffset + 4).assumingMemoryBound(to: UInt8.self)
                let y = out + b * 32
                for j in 0..<16 {
                    let low = Int(q[j] & 0x0F) | Int((qh >> UInt32(j)) & 1) << 4
                    let high = Int(q[j] >> 4) | Int((qh >> UInt32(j + 16)) & 1) << 4
                    if hasMinimum {
                        y[j] = d * Float(low) + m
                        y[j + 16] = d * Float(high) + m
                    } else {
                        y[j] = d * Float(low - 16)
                        y[j + 16] = d * Float(high - 16)
                    }
                }
            }
        case .iq4_nl:
            for b in 0..<(count / 32) {
                let block = src + b * 18
                let d = half(block.loadUnaligned(as: UInt16.self))
                let q = (block + 2).assumingMemoryBound(to: UInt8.self)
                let y = out + b * 32
                for j in 0..<16 {
                    y[j] = d * iq4Values[Int(q[j] & 0x0F)]
                    y[j + 16] = d * iq4Values[Int(q[j] >> 4)]
                }
            }
        case .q2_K:
            for b in 0..<(count / 256) {
                let block = src + b * 84
                let scales = block.assumingMemoryBound(to: UInt8.self)
                let q = (block + 16).assumingMemoryBound(to: UInt8.self)
                let d = half(block.loadUnaligned(fromByteOffset: 80, as: UInt16.self))
                let dmin = half(block.loadUnaligned(fromByteOffset: 82, as: UInt16.self))
                let y = out + b * 256
                for e in 0..<256 {
                    let scale = scales[e / 16]
                    let dl = d * Float(scale & 0x0F), ml = dmin * Float(scale >> 4)
                    let bits = (q[32 * (e / 128) + e % 32] >> UInt8(2 * ((e / 32) % 4))) & 3
                    y[e] = dl * Float(bits) - ml
                }
            }
        case .q3_K:
            var dl = [Float](repeating: 0, count: 16)
            for b in 0..<(count / 256) {
                let block = src + b * 110
                let hmask = block.assumingMemoryBound(to: UInt8.self)
                let q = (block + 32).assumingMemoryBound(to: UInt8.self)
                let packed = (block + 96).assumingMemoryBound(to: UInt8.self)
                let d = half(block.loadUnaligned(fromByteOffset: 108, as: UInt16.self))
                for k in 0..<16 {
                    let low = k < 8 ? packed[k] & 0x0F : packed[k - 8] >> 4
                    let high = (packed[8 + k % 4] >> UInt8(2 * (k / 4))) & 3
                    dl[k] = d * Float(Int(low | high << 4) - 32)
                }
                let y = out + b * 256
                for e in 0..<256 {
                    let bits = Int((q[32 * (e / 128) + e % 32] >> UInt8(2 * ((e / 32) % 4))) & 3)
                    let highBitSet = hmask[e % 32] & (1 << UInt8(e / 32)) != 0
                    y[e] = dl[e / 16] * Float(highBitSet ? bits : bits - 4)
                }
            }
        case .q4_K, .q5_K:
            let size = type.blockBytes
            let hasHighBits = type == .q5_K
            for b in 0..<(count / 256) {
                let block = src + b * size
                let d = half(block.loadUnaligned(as: UInt16.self))
                let dmin = half(block.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
                let packed = (block + 4).assumingMemoryBound(to: UInt8.self)
                let qh = (block + 16).assumingMemoryBound(to: UInt8.self)
                let q = (block + (hasHighBits ? 48 : 16)).assumingMemoryBound(to: UInt8.self)
                let y = out + b * 256
                for j in 0..<8 {
                    let (scale, minimum) = scaleAndMin(packed, j)
                    let d1 = d * Float(scale), m1 = dmin * Float(minimum)
                    for l in 0..<32 {
                        let byte = q[32 * (j / 2) + l]
                        var value = Int(j % 2 == 0 ? byte & 0x0F : byte >> 4)
                        if hasHighBits { value |= Int((qh[l] >> UInt8(j)) & 1) << 4 }
                        y[32 * j + l] = d1 * Float(value) - m1
                    }
                }
            }
        case .q6_K:
            for b in 0..<(count / 256) {
                let block = src + b * 210
                let ql = block.assumingMemoryBound(to: UInt8.self)
                let qh = (block + 128).assumingMemoryBound(to: UInt8.self)
                let scales = (block + 192).assumingMemoryBound(to: Int8.self)
                let d = half(block.loadUnaligned(fromByteOffset: 208, as: UInt16.self))
                let y = out + b * 256
                for e in 0..<256 {
                    let h = e / 128, k = (e / 32) % 4, l = e % 32
                    let lowByte = ql[64 * h + 32 * (k % 2) + l]
                    let low = k < 2 ? lowByte & 0x0F : lowByte >> 4
                    let high = (qh[32 * h + l] >> UInt8(2 * k)) & 3
                    y[e] = d * Float(scales[e / 16]) * Float(Int(low | high << 4) - 32)
                }
            }
        case .iq4_xs:
            for b in 0..<(count / 256) {
                let block = src + b * 136
                let d = half(block.loadUnaligned(as: UInt16.self))
                let scalesHigh = UInt16(littleEndian: block.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
                let scalesLow = (block + 4).assumingMemoryBound(to: UInt8.self)
                let q = (block + 8).assumingMemoryBound(to: UInt8.self)
                let y = out + b * 256
                for j in 0..<8 {
                    let low = (scalesLow[j / 2] >> UInt8(4 * (j % 2))) & 0x0F
                    let high = UInt8((scalesHigh >> UInt16(2 * j)) & 3)
                    let dl = d * Float(Int(low | high << 4) - 32)
                    for i in 0..<16 {
                        y[32 * j + i] = dl * iq4Values[Int(q[16 * j + i] & 0x0F)]
                        y[32 * j + 16 + i] = dl * iq4Values[Int(q[16 * j + i] >> 4)]
                    }
                }
            }
        }
    }

    /// IQ4_NL's and IQ4_XS's codebook (ggml-common.h, `kvalues_iq4nl`): 16 levels spaced more finely near zero,
    /// where trained weights cluster.
    static let iq4Values: [Float] = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]

    /// Scale and minimum of sub-block `j` (0..<8) from Q4_K's and Q5_K's 12 packed bytes: for j < 4 the low six
    /// bits of bytes j and j + 4; for j ≥ 4 the nibbles of byte j + 4 with the top two bits of bytes j − 4 and j
    /// (ggml-quants.c, `get_scale_min_k4`).
    @inline(__always)
    static func scaleAndMin(_ packed: UnsafePointer<UInt8>, _ j: Int) -> (UInt8, UInt8) {
        if j < 4 { return (packed[j] & 63, packed[j + 4] & 63) }
        return ((packed[j + 4] & 0x0F) | (packed[j - 4] >> 6) << 4, (packed[j + 4] >> 4) | (packed[j] >> 6) << 4)
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
