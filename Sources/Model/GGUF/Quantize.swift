/// Conversion from f32 to GGML's stored types, as ggml-quants.c's reference quantizers do it.
///
/// Only the types tests write tiny models in; the K-quants and the 5-bit and IQ4 types are read, not written:
/// files that hold them come from llama.cpp's quantizer, whose choice of scales is what a reader must match.
public enum Quantize {
    public static let writableTypes: [GGMLType] = [.f32, .f16, .bf16, .q8_0, .q4_0, .q4_1]

    /// The bytes of `values` stored as `type`, one of `writableTypes`; `values.count` must be a multiple of the
    /// block size.
    public static func bytes(_ values: [Float], as type: GGMLType) -> [UInt8] {
        precondition(writableTypes.contains(type), "no quantizer for \(type.name); write its blocks with GGUFWriter.addRawTensor")
        precondition(values.count % type.blockSize == 0, "\(values.count) values do not fill \(type.name) blocks")
        var out = [UInt8](repeating: 0, count: values.count / type.blockSize * type.blockBytes)
        out.withUnsafeMutableBytes { dst in
            values.withUnsafeBufferPointer { x in
                let blocks = values.count / type.blockSize
                switch type {
                case .f32:
                    for i in 0..<values.count { dst.storeBytes(of: x[i].bitPattern.littleEndian, toByteOffset: 4 * i, as: UInt32.self) }
                case .f16:
                    for i in 0..<values.count { dst.storeBytes(of: Float16(x[i]).bitPattern.littleEndian, toByteOffset: 2 * i, as: UInt16.self) }
                case .bf16:
                    for i in 0..<values.count { dst.storeBytes(of: bf16(x[i]).littleEndian, toByteOffset: 2 * i, as: UInt16.self) }
                case .q8_0:
                    for b in 0..<blocks {
                        let xb = x.baseAddress! + b * 32
                        var amax: Float = 0
                        for j in 0..<32 { amax = max(amax, abs(xb[j])) }
                        let d = amax / 127
                        let id: Float = d != 0 ? 1 / d : 0
                        dst.storeBytes(of: Float16(d).bitPattern.littleEndian, toByteOffset: b * 34, as: UInt16.self)
                        for j in 0..<32 {
                            let q = Int8((xb[j] * id).rounded(.toNearestOrAwayFromZero))
                            dst[b * 34 + 2 + j] = UInt8(bitPattern: q)
                        }
                    }
                case .q4_0:
                    for b in 0..<blocks {
                        let xb = x.baseAddress! + b * 32
                        // The value of largest magnitude, with its sign, maps to −8.
                        var amax: Float = 0, vmax: Float = 0
                        for j in 0..<32 where abs(xb[j]) > amax { amax = abs(xb[j]); vmax = xb[j] }
                        let d = vmax / -8
                        let id: Float = d != 0 ? 1 / d : 0
                        dst.storeBytes(of: Float16(d).bitPattern.littleEndian, toByteOffset: b * 18, as: UInt16.self)
                        for j in 0..<16 {
                            let lo = min(15, Int8(truncatingIfNeeded: Int(xb[j] * id + 8.5)))
                            let hi = min(15, Int8(truncatingIfNeeded: Int(xb[j + 16] * id + 8.5)))
                            dst[b * 18 + 2 + j] = UInt8(lo) | UInt8(hi) << 4
                        }
                    }
                case .q4_1:
                    for b in 0..<blocks {
                        let xb = x.baseAddress! + b * 32
                        var lo = Float.greatestFiniteMagnitude, hi = -Float.greatestFiniteMagnitude
                        for j in 0..<32 { lo = min(lo, xb[j]); hi = max(hi, xb[j]) }
                        let d = (hi - lo) / 15
                        let id: Float = d != 0 ? 1 / d : 0
                        dst.storeBytes(of: Float16(d).bitPattern.littleEndian, toByteOffset: b * 20, as: UInt16.self)
                        dst.storeBytes(of: Float16(lo).bitPattern.littleEndian, toByteOffset: b * 20 + 2, as: UInt16.self)
                        for j in 0..<16 {
                            let q0 = min(15, Int8(truncatingIfNeeded: Int((xb[j] - lo) * id + 0.5)))
                            let q1 = min(15, Int8(truncatingIfNeeded: Int((xb[j + 16] - lo) * id + 0.5)))
                            dst[b * 20 + 4 + j] = UInt8(q0) | UInt8(q1) << 4
                        }
                    }
                case .q5_0, .q5_1, .iq4_nl, .q2_K, .q3_K, .q4_K, .q5_K, .q6_K, .iq4_xs:
                    preconditionFailure("no quantizer for \(type.name)")  // refused above
                }
            }
        }
        return out
    }

    /// f32 → bf16 with round-to-nearest-even, NaN kept quiet (as ggml_compute_fp32_to_bf16 does).
    static func bf16(_ x: Float) -> UInt16 {
        let u = x.bitPattern
        if u & 0x7FFF_FFFF > 0x7F80_0000 { return UInt16(u >> 16) | 64 }
        return UInt16((u &+ (0x7FFF &+ ((u >> 16) & 1))) >> 16)
    }
}
