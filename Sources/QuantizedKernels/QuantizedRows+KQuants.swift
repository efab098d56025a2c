// Compiled twice, as QuantizedRows.swift is (the symbolic link in QuantizedKernelsAVX2).

/// The types of 256-value super-blocks (ggml-common.h): Q2_K…Q6_K and IQ4_XS, eight 32-value groups each with
/// its own sub-block scales. A super-block's scales are unpacked once, into a vector of the eight groups'
/// float factors (super-block scale · sub-block scale · activation step), so a group costs its integer dot
/// product, one conversion and one multiply-add.
extension QuantizedRows {
    @inline(never) static func q4_K(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        for r in rows { y[r] = q45_K(m.row(r), m.groups, a, highBits: false) }
    }

    @inline(never) static func q5_K(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        for r in rows { y[r] = q45_K(m.row(r), m.groups, a, highBits: true) }
    }

    @inline(never) static func q6_K(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        for r in rows { y[r] = q6_K(m.row(r), m.groups, a) }
    }

    @inline(never) static func q3_K(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        for r in rows { y[r] = q3_K(m.row(r), m.groups, a) }
    }

    @inline(never) static func q2_K(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        for r in rows { y[r] = q2_K(m.row(r), m.groups, a) }
    }

    @inline(never) static func iq4_xs(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        codebook.withUnsafeBufferPointer { table in
            for r in rows { y[r] = iq4_xs(m.row(r), m.groups, a, table.baseAddress!) }
        }
    }

    /// Q4_K's and Q5_K's eight 6-bit scales and eight 6-bit minimums from their 12 packed bytes, as bytes
    /// (ggml-quants.c, `get_scale_min_k4`): sub-blocks 0–3 keep the low six bits of bytes 0–3 (scales) and
    /// 4–7 (minimums); sub-blocks 4–7 take the nibbles of bytes 8–11 as low bits and the top two bits of bytes
    /// 0–3 (scales) or 4–7 (minimums) as high bits. Four sub-blocks per 32-bit word, all at once.
    @inline(__always) static func scalesAndMinimums(_ p: UnsafeRawPointer) -> (scales: SIMD8<Float>, minimums: SIMD8<Float>) {
        let w0 = UInt32(littleEndian: p.loadUnaligned(as: UInt32.self))
        let w1 = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        let w2 = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        let six: UInt32 = 0x3F3F_3F3F, nibble: UInt32 = 0x0F0F_0F0F, two: UInt32 = 0x0303_0303
        let scales = SIMD2<UInt32>(w0 & six, (w2 & nibble) | ((w0 >> 6) & two) << 4)
        let minimums = SIMD2<UInt32>(w1 & six, ((w2 >> 4) & nibble) | ((w1 >> 6) & two) << 4)
        @inline(__always) func floats(_ v: SIMD2<UInt32>) -> SIMD8<Float> { SIMD8<Float>(unsafeBitCast(v, to: SIMD8<UInt8>.self)) }
        return (floats(scales), floats(minimums))
    }

    /// Bit `j` of each lane as 16 or 0 (Q5_K's fifth bits of group j).
    @inline(__always) static func bitAsSixteen(_ v: Lanes, _ j: Int) -> Lanes {
        (j <= 4 ? v &<< UInt16(4 - j) : v &>> UInt16(j - 4)) & Lanes(repeating: 16)
    }

    /// Bits 2k and 2k + 1 of each lane as a multiple of 16 (Q6_K's high bits of group k).
    @inline(__always) static func twoBitsAsHigh(_ v: Lanes, _ k: Int) -> Lanes {
        (k <= 2 ? v &<< UInt16(4 - 2 * k) : v &>> UInt16(2 * k - 4)) & Lanes(repeating: 0x30)
    }

    @inline(__always) static func scaled(_ v: Words, _ scale: Int16) -> Words { v &* Words(repeating: scale) }

    @inline(__always) static func q45_K(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations, highBits: Bool) -> Float {
        var acc = (SIMD8<Float>(), SIMD8<Float>())   // even and odd groups: two chains of additions
        var minimums = SIMD8<Float>()
        let size = highBits ? 176 : 144, qs = highBits ? 48 : 16
        for s in 0..<(groups / 8) {
            let block = w + size * s
            let steps = eight(a.scales + 8 * s)
            let (scales, mins) = scalesAndMinimums(block + 4)
            let factors = scales * half(block, 0) * steps
            minimums += mins * half(block, 2) * steps * groupSums(a, 8 * s)
            let (fifthLow, fifthHigh) = highBits ? (bytes(block, 16), bytes(block, 32)) : (Lanes(), Lanes())
            for pair in 0..<4 {
                // Group 2·pair in the low nibbles of 32 bytes, group 2·pair + 1 in their high ones.
                let low = bytes(block, qs + 32 * pair), high = bytes(block, qs + 32 * pair + 16)
                @inline(__always) func group(_ j: Int, _ shift: UInt16) {
                    var (l, h) = ((low &>> shift) & Lanes(repeating: 0x0F), (high &>> shift) & Lanes(repeating: 0x0F))
                    if highBits {
                        l |= bitAsSixteen(fifthLow, j)
                        h |= bitAsSixteen(fifthHigh, j)
                    }
                    add(&acc, j, dot(signed(l), signed(h), a, 8 * s + j) * factors[j])
                }
                group(2 * pair, 0)
                group(2 * pair + 1, 4)
            }
        }
        return (acc.0 + acc.1).sum() - minimums.sum()
    }

    static func q6_K(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations) -> Float {
        var acc = (SIMD8<Float>(), SIMD8<Float>())   // even and odd groups: two chains of additions
        let bias = Words(repeating: 32)
        for s in 0..<(groups / 8) {
            let block = w + 210 * s
            let factors = half(block, 208) * eight(a.scales + 8 * s)
            let scales = block + 192
            for h in 0..<2 {
                let highLow = bytes(block, 128 + 32 * h), highHigh = bytes(block, 144 + 32 * h)
                for k in 0..<4 {
                    let j = 4 * h + k
                    let offset = 64 * h + 32 * (k % 2), shift = UInt16(k < 2 ? 0 : 4)
                    let l = (bytes(block, offset) &>> shift) & Lanes(repeating: 0x0F) | twoBitsAsHigh(highLow, k)
                    let u = (bytes(block, offset + 16) &>> shift) & Lanes(repeating: 0x0F) | twoBitsAsHigh(highHigh, k)
                    // Each 16 values' scale folded into the weights: |(q − 32) · scale| ≤ 32 · 128 fits Int16.
                    let s0 = Int16(scales.load(fromByteOffset: 2 * j, as: Int8.self))
                    let s1 = Int16(scales.load(fromByteOffset: 2 * j + 1, as: Int8.self))
                    add(&acc, j, dot(scaled(signed(l) &- bias, s0), scaled(signed(u) &- bias, s1), a, 8 * s + j) * factors[j])
                }
            }
        }
        return (acc.0 + acc.1).sum()
    }

    static func q3_K(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations) -> Float {
        var acc = (SIMD8<Float>(), SIMD8<Float>())   // even and odd groups: two chains of additions
        let four = Words(repeating: 4), three = Lanes(repeating: 3), one = Lanes(repeating: 1)
        for s in 0..<(groups / 8) {
            let block = w + 110 * s
            let factors = half(block, 108) * eight(a.scales + 8 * s)
            let packed = block + 96
            @inline(__always) func scale(_ k: Int) -> Int16 {
                let low = k < 8 ? packed.load(fromByteOffset: k, as: UInt8.self) & 0x0F : packed.load(fromByteOffset: k - 8, as: UInt8.self) >> 4
                let high = (packed.load(fromByteOffset: 8 + k % 4, as: UInt8.self) >> UInt8(2 * (k / 4))) & 3
                return Int16(low | high << 4) - 32
            }
            let maskLow = bytes(block, 0), maskHigh = bytes(block, 16)
            for h in 0..<2 {
                let low = bytes(block, 32 + 32 * h), high = bytes(block, 48 + 32 * h)
                for k in 0..<4 {
                    let j = 4 * h + k, shift = UInt16(2 * k)
                    let l = signed((low &>> shift) & three | ((maskLow &>> UInt16(j)) & one) &<< 2) &- four
                    let u = signed((high &>> shift) & three | ((maskHigh &>> UInt16(j)) & one) &<< 2) &- four
                    add(&acc, j, dot(scaled(l, scale(2 * j)), scaled(u, scale(2 * j + 1)), a, 8 * s + j) * factors[j])
                }
            }
        }
        return (acc.0 + acc.1).sum()
    }

    static func q2_K(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations) -> Float {
        var acc = (SIMD8<Float>(), SIMD8<Float>())   // even and odd groups: two chains of additions
        var offset: Float = 0
        let three = Lanes(repeating: 3)
        for s in 0..<(groups / 8) {
            let block = w + 84 * s
            let d = half(block, 80), dmin = half(block, 82)
            for h in 0..<2 {
                let low = bytes(block, 16 + 32 * h), high = bytes(block, 32 + 32 * h)
                for k in 0..<4 {
                    let j = 4 * h + k, g = 8 * s + j, shift = UInt16(2 * k)
                    let b0 = block.load(fromByteOffset: 2 * j, as: UInt8.self), b1 = block.load(fromByteOffset: 2 * j + 1, as: UInt8.self)
                    let l = scaled(signed((low &>> shift) & three), Int16(b0 & 0x0F))
                    let u = scaled(signed((high &>> shift) & three), Int16(b1 & 0x0F))
                    add(&acc, j, dot(l, u, a, g) * (d * a.scales[g]))
                    offset -= dmin * a.scales[g] * (Float(b0 >> 4) * Float(a.halfSums[2 * g]) + Float(b1 >> 4) * Float(a.halfSums[2 * g + 1]))
                }
            }
        }
        return (acc.0 + acc.1).sum() + offset
    }

    static func iq4_xs(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations, _ table: UnsafePointer<Int16>) -> Float {
        var acc = (SIMD8<Float>(), SIMD8<Float>())   // even and odd groups: two chains of additions
        for s in 0..<(groups / 8) {
            let block = w + 136 * s
            let d = half(block, 0)
            let high = UInt16(littleEndian: block.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
            for j in 0..<8 {
                let g = 8 * s + j
                let low = (block.load(fromByteOffset: 4 + j / 2, as: UInt8.self) >> UInt8(4 * (j % 2))) & 0x0F
                let scale = Int(low | UInt8((high >> UInt16(2 * j)) & 3) << 4) - 32
                let (l, u) = iq4(block + 8 + 16 * j, table)
                add(&acc, j, dot(l, u, a, g) * (d * Float(scale) * a.scales[g]))
            }
        }
        return (acc.0 + acc.1).sum()
    }
}
