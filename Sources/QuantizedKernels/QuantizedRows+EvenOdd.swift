// Compiled twice, as QuantizedRows.swift is (the symbolic link in QuantizedKernelsAVX2).

/// Unpacking into the even/odd form the row kernels used before they read the activations in order: a group's
/// 32 values as (the 16 even-indexed elements, the 16 odd-indexed ones), sixteen 16-bit lanes each. Kept with
/// their signatures for code that reads blocks in that form.
extension QuantizedRows {
    @inline(__always) static func lanes(_ p: UnsafeRawPointer, _ offset: Int) -> Lanes {
        p.loadUnaligned(fromByteOffset: offset, as: Lanes.self)
    }

    /// The 32 nibbles of 16 bytes in the legacy order (element j in byte j's low nibble, element 16 + j in its
    /// high one), as (even elements, odd elements).
    @inline(__always) static func legacyNibbles(_ p: UnsafeRawPointer, _ offset: Int) -> (Lanes, Lanes) {
        // The 16 bytes in both halves, the low half shifted left by 4: then one shift right by 4 (and a mask)
        // gives the even elements and one by 12 the odd ones.
        let v = p.loadUnaligned(fromByteOffset: offset, as: SIMD8<UInt16>.self)
        let t = Lanes(lowHalf: v, highHalf: v) &* Lanes(16, 16, 16, 16, 16, 16, 16, 16, 1, 1, 1, 1, 1, 1, 1, 1)
        return ((t &>> 4) & Lanes(repeating: 0x0F), t &>> 12)
    }

    /// Bits `shift ..< shift + width` of each of 32 bytes (element l in byte l), as (even, odd).
    @inline(__always) static func field(_ v: Lanes, _ shift: UInt16, _ mask: UInt16) -> (Lanes, Lanes) {
        let m = Lanes(repeating: mask)
        return ((v &>> shift) & m, (v &>> (shift + 8)) & m)
    }

    /// Legacy Q5's fifth bits (bit e of `qh` for element e) as 16 or 0 per element, as (even, odd): a multiply
    /// moves the wanted bit to bit 15, so one shift by 11 gives 16 or 0.
    @inline(__always) static func fifthBits(_ qh: UInt32) -> (Lanes, Lanes) {
        let h = Lanes(lowHalf: SIMD8(repeating: UInt16(truncatingIfNeeded: qh)), highHalf: SIMD8(repeating: UInt16(truncatingIfNeeded: qh >> 16)))
        let evenMask = Lanes(1, 4, 16, 64, 256, 1024, 4096, 16384, 1, 4, 16, 64, 256, 1024, 4096, 16384)
        let evenMul = Lanes(32768, 8192, 2048, 512, 128, 32, 8, 2, 32768, 8192, 2048, 512, 128, 32, 8, 2)
        let oddMask = evenMask &<< 1, oddMul = evenMul &>> 1
        return (((h & evenMask) &* evenMul) &>> 11, ((h & oddMask) &* oddMul) &>> 11)
    }

    /// 16 bytes of IQ4 indices in the legacy nibble order, looked up one by one, as (even, odd).
    @inline(__always) static func iq4Lanes(_ p: UnsafeRawPointer, _ table: UnsafePointer<Int16>) -> (SIMD16<Int16>, SIMD16<Int16>) {
        var e = SIMD16<Int16>(), o = SIMD16<Int16>()
        for i in 0..<8 {
            let b0 = Int(p.load(fromByteOffset: 2 * i, as: UInt8.self)), b1 = Int(p.load(fromByteOffset: 2 * i + 1, as: UInt8.self))
            e[i] = table[b0 & 15]; e[8 + i] = table[b0 >> 4]
            o[i] = table[b1 & 15]; o[8 + i] = table[b1 >> 4]
        }
        return (e, o)
    }

    /// Scale and minimum of sub-block j from Q4_K's and Q5_K's 12 packed bytes (ggml-quants.c, `get_scale_min_k4`).
    @inline(__always) static func scaleAndMin(_ p: UnsafeRawPointer, _ j: Int) -> (Float, Float) {
        @inline(__always) func byte(_ i: Int) -> UInt8 { p.load(fromByteOffset: i, as: UInt8.self) }
        if j < 4 { return (Float(byte(j) & 63), Float(byte(j + 4) & 63)) }
        return (Float((byte(j + 4) & 0x0F) | (byte(j - 4) >> 6) << 4), Float((byte(j + 4) >> 4) | (byte(j) >> 6) << 4))
    }
}
