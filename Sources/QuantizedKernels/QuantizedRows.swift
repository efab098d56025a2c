// This file is compiled twice: as the module QuantizedKernels for the architecture's baseline (SSE2 on x86-64)
// and, through a symbolic link, as QuantizedKernelsAVX2 with AVX2 and FMA enabled (Package.swift). Model picks
// one at run time from the CPU's flags. Both compilations perform the same operations in the same order on
// the same values, so their results agree bit for bit; only the instructions differ (the AVX2 one also converts
// halves with F16C, `QUANTIZED_KERNELS_F16C`, which is exact as the portable conversion is).

/// 8-bit activations in the layout the row kernels read, one entry per 32-value group of the input.
///
/// `values` holds, per group, the 16 even-indexed values then the 16 odd-indexed ones as Int16 (64 bytes):
/// the layout in which a 32-byte run of weights, read as sixteen 16-bit lanes, lines up with them lane for
/// lane (a lane's low byte is an even element, its high byte the odd one after it). `scales` holds each
/// group's step (value = step · q) and `halfSums` the sums of q over each group's first and second 16 values
/// (the types with minimums subtract minimum · Σ x).
public struct QuantizedActivations: @unchecked Sendable {
    public let values: UnsafeRawPointer
    public let scales: UnsafePointer<Float>
    public let halfSums: UnsafePointer<Int32>
    /// Per group, Σ x̂ as llama.cpp's Q8_1 blocks store it (an f16 of the unrounded step · Σ q), for the
    /// legacy types with a minimum, so that they read the values llama.cpp reads.
    public let sums: UnsafePointer<Float>
    /// Sixteen Int16 ones. Read through a pointer, they are a multiplier LLVM cannot fold away, so the widening
    /// of the 16-bit pair sums to 32 bits stays a multiply-add it selects `pmaddwd` for (one instruction where a
    /// constant 1 left three shifts and an addition).
    public let ones: UnsafeRawPointer

    public init(values: UnsafeRawPointer, scales: UnsafePointer<Float>, halfSums: UnsafePointer<Int32>, sums: UnsafePointer<Float>,
                ones: UnsafeRawPointer) {
        self.values = values
        self.scales = scales
        self.halfSums = halfSums
        self.sums = sums
        self.ones = ones
    }
}

/// y[r] = Σ over the row's groups of (weight scale · activation step) · Σ q_w · q_x (+ the minimum terms), for
/// rows stored in GGML's quantized blocks, with integer products.
///
/// Every weight type is unpacked into the same form, two vectors of sixteen 16-bit integers per group (the even
/// and the odd elements), so one integer dot product serves them all: 16-bit multiplies and adds, whose
/// pairs of products stay inside Int16 for every type (|q_w| ≤ 128, |q_x| ≤ 127: 2 · 128 · 127 = 32512), then
/// one widening of the pairs to 32 bits by a multiply-add with ones. With AVX2 each step is one 256-bit
/// instruction (`vpmullw`, `vpaddw`, `vpmaddwd`, `vcvtdq2ps`); the group's float scale is applied to the eight
/// partial sums as a vector, so a row costs one horizontal sum, at its end.
///
/// Multiplying the weights and the activations with `pmaddwd` directly (one instruction fewer) was tried: LLVM
/// moves the even/odd selection it needs into the weights' unpacking and the group then costs more
/// instructions, not fewer; so does `pmaddubsw`, which it selects only for a saturating pattern it first
/// simplifies away when the weights' range is known.
public enum QuantizedRows {
    /// The GGML type numbers this file reads.
    public static let types: Set<UInt32> = [2, 3, 6, 7, 8, 20, 10, 11, 12, 13, 14, 23]

    /// Rows `rows` of the matrix whose row r starts at `blocks + r · rowBytes` and spans `groups` 32-value groups.
    @inline(never)
    public static func compute(type: UInt32, blocks: UnsafeRawPointer, rowBytes: Int, groups: Int, rows: Range<Int>,
                               activations a: QuantizedActivations, into y: UnsafeMutablePointer<Float>) {
        switch type {
        case 2: for r in rows { y[r] = q4_0(blocks + r * rowBytes, groups, a) }
        case 3: for r in rows { y[r] = q4_1(blocks + r * rowBytes, groups, a) }
        case 6: for r in rows { y[r] = q5(blocks + r * rowBytes, groups, a, minimum: false) }
        case 7: for r in rows { y[r] = q5(blocks + r * rowBytes, groups, a, minimum: true) }
        case 8: for r in rows { y[r] = q8_0(blocks + r * rowBytes, groups, a) }
        case 20: for r in rows { y[r] = iq4_nl(blocks + r * rowBytes, groups, a) }
        case 10: for r in rows { y[r] = q2_K(blocks + r * rowBytes, groups, a) }
        case 11: for r in rows { y[r] = q3_K(blocks + r * rowBytes, groups, a) }
        case 12: for r in rows { y[r] = q4_K(blocks + r * rowBytes, groups, a) }
        case 13: for r in rows { y[r] = q5_K(blocks + r * rowBytes, groups, a) }
        case 14: for r in rows { y[r] = q6_K(blocks + r * rowBytes, groups, a) }
        case 23: for r in rows { y[r] = iq4_xs(blocks + r * rowBytes, groups, a) }
        default: preconditionFailure("no quantized kernel for GGML type \(type)")
        }
    }

    typealias Lanes = SIMD16<UInt16>

    /// Σ over the group's 32 elements of w · x, in eight partial sums (lanes 0–3 from elements 0–15, 4–7 from
    /// 16–31), as floats: exact, since |sum| ≤ 32 · 128 · 127 < 2²⁴.
    @inline(__always)
    static func dot(_ even: SIMD16<Int16>, _ odd: SIMD16<Int16>, _ a: QuantizedActivations, _ g: Int) -> SIMD8<Float> {
        let x = a.values + 64 * g
        let pairs = even &* x.load(as: SIMD16<Int16>.self) &+ odd &* x.load(fromByteOffset: 32, as: SIMD16<Int16>.self)
        return SIMD8<Float>(pairSums(pairs, a.ones.load(as: SIMD16<Int16>.self)))
    }

    /// Lane k = w[2k] · x[2k] + w[2k+1] · x[2k+1] in 32 bits: the widened even products plus the widened odd
    /// ones, the shape LLVM selects `pmaddwd` for.
    @inline(__always) static func pairSums(_ w: SIMD16<Int16>, _ x: SIMD16<Int16>) -> SIMD8<Int32> {
        widened(w.evenHalf) &* widened(x.evenHalf) &+ widened(w.oddHalf) &* widened(x.oddHalf)
    }

    @inline(__always) static func widened(_ v: SIMD8<Int16>) -> SIMD8<Int32> { SIMD8<Int32>(truncatingIfNeeded: v) }

    @inline(__always) static func signed(_ v: Lanes) -> SIMD16<Int16> { unsafeBitCast(v, to: SIMD16<Int16>.self) }

    @inline(__always) static func lanes(_ p: UnsafeRawPointer, _ offset: Int) -> Lanes {
        p.loadUnaligned(fromByteOffset: offset, as: Lanes.self)
    }

    /// The 32 nibbles of 16 bytes in the legacy order (element j in byte j's low nibble, element 16 + j in its
    /// high one), as (even elements, odd elements).
    @inline(__always) static func legacyNibbles(_ p: UnsafeRawPointer, _ offset: Int) -> (Lanes, Lanes) {
        // The 16 bytes in both halves, the low half shifted left by 4: then one shift right by 4 (and a mask)
        // gives the even elements and one by 12 the odd ones, five instructions where four shifts, three masks
        // and two insertions took nine.
        let v = p.loadUnaligned(fromByteOffset: offset, as: SIMD8<UInt16>.self)
        let t = Lanes(lowHalf: v, highHalf: v) &* Lanes(16, 16, 16, 16, 16, 16, 16, 16, 1, 1, 1, 1, 1, 1, 1, 1)
        return ((t &>> 4) & Lanes(repeating: 0x0F), t &>> 12)
    }

    /// Bits `shift ..< shift + width` of each of 32 bytes (element l in byte l), as (even, odd).
    @inline(__always) static func field(_ v: Lanes, _ shift: UInt16, _ mask: UInt16) -> (Lanes, Lanes) {
        let m = Lanes(repeating: mask)
        return ((v &>> shift) & m, (v &>> (shift + 8)) & m)
    }

    /// Legacy Q5's fifth bits (bit e of `qh` for element e) as 16 or 0 per element: lane i of the even half
    /// wants bit 2i of each 16-bit half of qh, the odd half bit 2i + 1; a multiply moves the wanted bit to bit
    /// 15 (so one shift by 11 gives 16 or 0) without a per-lane shift, which AVX2 lacks for 16-bit lanes.
    @inline(__always) static func fifthBits(_ qh: UInt32) -> (Lanes, Lanes) {
        let h = Lanes(lowHalf: SIMD8(repeating: UInt16(truncatingIfNeeded: qh)), highHalf: SIMD8(repeating: UInt16(truncatingIfNeeded: qh >> 16)))
        // Constants written out: built in a loop, they were rebuilt lane by lane for every group.
        let evenMask = Lanes(1, 4, 16, 64, 256, 1024, 4096, 16384, 1, 4, 16, 64, 256, 1024, 4096, 16384)
        let evenMul = Lanes(32768, 8192, 2048, 512, 128, 32, 8, 2, 32768, 8192, 2048, 512, 128, 32, 8, 2)
        let oddMask = evenMask &<< 1, oddMul = evenMul &>> 1
        return (((h & evenMask) &* evenMul) &>> 11, ((h & oddMask) &* oddMul) &>> 11)
    }

    @inline(__always) static func half(_ p: UnsafeRawPointer, _ offset: Int) -> Float {
        let bits = UInt16(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
        #if QUANTIZED_KERNELS_F16C
        // One `vcvtph2ps`: the bit manipulation below took sixteen instructions, twice a group for the types
        // with a minimum. The conversion is exact, so both compilations read the same value.
        return Float(Float16(bitPattern: bits))
        #else
        // Exact for every half: its bits shifted into f32 position give the value · 2⁻¹¹², subnormals included;
        // infinities and NaNs are selected rather than branched to, a NaN quieted as F16C quiets it. Float(Float16)
        // would be a library call on baseline x86-64.
        let h = UInt32(bits)
        let scaled = Float(bitPattern: (h & 0x7FFF) << 13) * 0x1p112
        let quiet: UInt32 = h & 0x3FF == 0 ? 0 : 0x0040_0000
        let special = Float(bitPattern: 0x7F80_0000 | (h & 0x3FF) << 13 | quiet)
        let magnitude = (h & 0x7C00) == 0x7C00 ? special : scaled
        return Float(bitPattern: magnitude.bitPattern | (h & 0x8000) << 16)
        #endif
    }

    /// Adds a group's term to the chain of its parity: one chain of dependent float additions would cost
    /// their latency per group; two let consecutive groups overlap.
    @inline(__always) static func add(_ acc: inout (SIMD8<Float>, SIMD8<Float>), _ g: Int, _ term: SIMD8<Float>) {
        if g & 1 == 0 { acc.0 += term } else { acc.1 += term }
    }

    @inline(__always) static func add(_ acc: inout (Float, Float), _ g: Int, _ term: Float) {
        if g & 1 == 0 { acc.0 += term } else { acc.1 += term }
    }

    @inline(__always) static func halves(_ s0: Float, _ s1: Float) -> SIMD8<Float> {
        SIMD8(lowHalf: SIMD4(repeating: s0), highHalf: SIMD4(repeating: s1))
    }

    @inline(__always) static func groupSum(_ a: QuantizedActivations, _ g: Int) -> Float {
        Float(a.halfSums[2 * g] + a.halfSums[2 * g + 1])
    }

    static func q8_0(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations) -> Float {
        var acc = (SIMD8<Float>(), SIMD8<Float>())
        for g in 0..<groups {
            let block = w + 34 * g
            let v = signed(lanes(block, 2))
            add(&acc, g, dot((v &<< 8) &>> 8, v &>> 8, a, g) * (half(block, 0) * a.scales[g]))
        }
        return (acc.0 + acc.1).sum()
    }

    static func q4_0(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations) -> Float {
        var acc = (SIMD8<Float>(), SIMD8<Float>())
        let eight = SIMD16<Int16>(repeating: 8)
        for g in 0..<groups {
            let block = w + 18 * g
            let (e, o) = legacyNibbles(block, 2)
            add(&acc, g, dot(signed(e) &- eight, signed(o) &- eight, a, g) * (half(block, 0) * a.scales[g]))
        }
        return (acc.0 + acc.1).sum()
    }

    static func q4_1(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations) -> Float {
        var acc = (SIMD8<Float>(), SIMD8<Float>()), offset: (Float, Float) = (0, 0)
        for g in 0..<groups {
            let block = w + 20 * g
            let (e, o) = legacyNibbles(block, 4)
            add(&acc, g, dot(signed(e), signed(o), a, g) * (half(block, 0) * a.scales[g]))
            add(&offset, g, half(block, 2) * a.sums[g])
        }
        return (acc.0 + acc.1).sum() + (offset.0 + offset.1)
    }

    static func q5(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations, minimum: Bool) -> Float {
        var acc = (SIMD8<Float>(), SIMD8<Float>()), offset: (Float, Float) = (0, 0)
        let size = minimum ? 24 : 22, qh = minimum ? 4 : 2
        let bias = SIMD16<Int16>(repeating: minimum ? 0 : 16)
        for g in 0..<groups {
            let block = w + size * g
            let (e, o) = legacyNibbles(block, qh + 4)
            let (he, ho) = fifthBits(UInt32(littleEndian: block.loadUnaligned(fromByteOffset: qh, as: UInt32.self)))
            add(&acc, g, dot(signed(e | he) &- bias, signed(o | ho) &- bias, a, g) * (half(block, 0) * a.scales[g]))
            if minimum { add(&offset, g, half(block, 2) * a.sums[g]) }
        }
        return (acc.0 + acc.1).sum() + (offset.0 + offset.1)
    }

    /// IQ4's codebook (ggml-common.h, `kvalues_iq4nl`).
    static let codebook: [Int16] = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]

    /// 16 bytes of IQ4 indices in the legacy nibble order, looked up one by one: SSE2 and AVX2 have no
    /// 16-bit table lookup the compiler reaches from Swift's SIMD types.
    @inline(__always) static func iq4Lanes(_ p: UnsafeRawPointer, _ table: UnsafePointer<Int16>) -> (SIMD16<Int16>, SIMD16<Int16>) {
        var e = SIMD16<Int16>(), o = SIMD16<Int16>()
        for i in 0..<8 {
            let b0 = Int(p.load(fromByteOffset: 2 * i, as: UInt8.self)), b1 = Int(p.load(fromByteOffset: 2 * i + 1, as: UInt8.self))
            e[i] = table[b0 & 15]; e[8 + i] = table[b0 >> 4]
            o[i] = table[b1 & 15]; o[8 + i] = table[b1 >> 4]
        }
        return (e, o)
    }

    static func iq4_nl(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations) -> Float {
        codebook.withUnsafeBufferPointer { table in
            var acc = (SIMD8<Float>(), SIMD8<Float>())
            for g in 0..<groups {
                let block = w + 18 * g
                let (e, o) = iq4Lanes(block + 2, table.baseAddress!)
                add(&acc, g, dot(e, o, a, g) * (half(block, 0) * a.scales[g]))
            }
            return (acc.0 + acc.1).sum()
        }
    }

    static func iq4_xs(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations) -> Float {
        codebook.withUnsafeBufferPointer { table in
            var acc = (SIMD8<Float>(), SIMD8<Float>())   // even and odd groups: two chains of additions
            for s in 0..<(groups / 8) {
                let block = w + 136 * s
                let d = half(block, 0)
                let high = UInt16(littleEndian: block.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
                for j in 0..<8 {
                    let g = 8 * s + j
                    let low = (block.load(fromByteOffset: 4 + j / 2, as: UInt8.self) >> UInt8(4 * (j % 2))) & 0x0F
                    let scale = Int(low | UInt8((high >> UInt16(2 * j)) & 3) << 4) - 32
                    let (e, o) = iq4Lanes(block + 8 + 16 * j, table.baseAddress!)
                    add(&acc, g, dot(e, o, a, g) * (d * Float(scale) * a.scales[g]))
                }
            }
            return (acc.0 + acc.1).sum()
        }
    }

    /// Scale and minimum of sub-block j from Q4_K's and Q5_K's 12 packed bytes (ggml-quants.c, `get_scale_min_k4`).
    @inline(__always) static func scaleAndMin(_ p: UnsafeRawPointer, _ j: Int) -> (Float, Float) {
        @inline(__always) func byte(_ i: Int) -> UInt8 { p.load(fromByteOffset: i, as: UInt8.self) }
        if j < 4 { return (Float(byte(j) & 63), Float(byte(j + 4) & 63)) }
        return (Float((byte(j + 4) & 0x0F) | (byte(j - 4) >> 6) << 4), Float((byte(j + 4) >> 4) | (byte(j) >> 6) << 4))
    }

    // Separate functions, so each is compiled with its constant `highBits`: the shared loop tested it per group.
    static func q4_K(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations) -> Float { q45_K(w, groups, a, highBits: false) }
    static func q5_K(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations) -> Float { q45_K(w, groups, a, highBits: true) }

    @inline(__always) static func q45_K(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations, highBits: Bool) -> Float {
        var acc = (SIMD8<Float>(), SIMD8<Float>())   // even and odd groups: two chains of additions
        var offset: Float = 0
        let size = highBits ? 176 : 144, qs = highBits ? 48 : 16
        for s in 0..<(groups / 8) {
            let block = w + size * s
            let d = half(block, 0), dmin = half(block, 2)
            for pair in 0..<4 {
                let v = lanes(block, qs + 32 * pair)
                // The pair's two groups written out: group 2·pair in the low nibbles, 2·pair + 1 in the high ones,
                // so the shifts and the parity are constants.
                @inline(__always) func group(_ j: Int, _ shift: UInt16, _ acc: inout SIMD8<Float>) {
                    let g = 8 * s + j
                    var (e, o) = field(v, shift, 0x0F)
                    if highBits {
                        let (he, ho) = field(lanes(block, 16), UInt16(j), 1)
                        e |= he &<< 4
                        o |= ho &<< 4
                    }
                    let (scale, minimum) = scaleAndMin(block + 4, j)
                    acc += dot(signed(e), signed(o), a, g) * (d * scale * a.scales[g])
                    offset -= dmin * minimum * a.scales[g] * groupSum(a, g)
                }
                group(2 * pair, 0, &acc.0)
                group(2 * pair + 1, 4, &acc.1)
            }
        }
        return (acc.0 + acc.1).sum() + offset
    }

    static func q6_K(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations) -> Float {
        var acc = (SIMD8<Float>(), SIMD8<Float>())   // even and odd groups: two chains of additions
        let bias = SIMD16<Int16>(repeating: 32)
        for s in 0..<(groups / 8) {
            let block = w + 210 * s
            let d = half(block, 208)
            for h in 0..<2 {
                let high = lanes(block, 128 + 32 * h)
                for k in 0..<4 {
                    let g = 8 * s + 4 * h + k
                    let (e, o) = field(lanes(block, 64 * h + 32 * (k % 2)), k < 2 ? 0 : 4, 0x0F)
                    let (he, ho) = field(high, UInt16(2 * k), 3)
                    let scales = block + 192 + 2 * (4 * h + k)
                    let s0 = Float(scales.load(as: Int8.self)), s1 = Float(scales.load(fromByteOffset: 1, as: Int8.self))
                    add(&acc, g, dot(signed(e | he &<< 4) &- bias, signed(o | ho &<< 4) &- bias, a, g) * (halves(s0, s1) * (d * a.scales[g])))
                }
            }
        }
        return (acc.0 + acc.1).sum()
    }

    static func q3_K(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations) -> Float {
        var acc = (SIMD8<Float>(), SIMD8<Float>())   // even and odd groups: two chains of additions
        let four = SIMD16<Int16>(repeating: 4)
        for s in 0..<(groups / 8) {
            let block = w + 110 * s
            let d = half(block, 108)
            let packed = block + 96
            @inline(__always) func scale(_ k: Int) -> Float {
                let low = k < 8 ? packed.load(fromByteOffset: k, as: UInt8.self) & 0x0F : packed.load(fromByteOffset: k - 8, as: UInt8.self) >> 4
                let high = (packed.load(fromByteOffset: 8 + k % 4, as: UInt8.self) >> UInt8(2 * (k / 4))) & 3
                return Float(Int(low | high << 4) - 32)
            }
            let mask = lanes(block, 0)
            for h in 0..<2 {
                let v = lanes(block, 32 + 32 * h)
                for k in 0..<4 {
                    let g = 8 * s + 4 * h + k
                    let (e, o) = field(v, UInt16(2 * k), 3)
                    let (he, ho) = field(mask, UInt16(4 * h + k), 1)
                    add(&acc, g, dot(signed(e | he &<< 2) &- four, signed(o | ho &<< 2) &- four, a, g)
                        * (halves(scale(2 * (4 * h + k)), scale(2 * (4 * h + k) + 1)) * (d * a.scales[g])))
                }
            }
        }
        return (acc.0 + acc.1).sum()
    }

    static func q2_K(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations) -> Float {
        var acc = (SIMD8<Float>(), SIMD8<Float>())   // even and odd groups: two chains of additions
        var offset: Float = 0
        for s in 0..<(groups / 8) {
            let block = w + 84 * s
            let d = half(block, 80), dmin = half(block, 82)
            for h in 0..<2 {
                let v = lanes(block, 16 + 32 * h)
                for k in 0..<4 {
                    let g = 8 * s + 4 * h + k
                    let (e, o) = field(v, UInt16(2 * k), 3)
                    let b0 = block.load(fromByteOffset: 2 * (4 * h + k), as: UInt8.self)
                    let b1 = block.load(fromByteOffset: 2 * (4 * h + k) + 1, as: UInt8.self)
                    add(&acc, g, dot(signed(e), signed(o), a, g) * (halves(Float(b0 & 0x0F), Float(b1 & 0x0F)) * (d * a.scales[g])))
                    offset -= dmin * a.scales[g] * (Float(b0 >> 4) * Float(a.halfSums[2 * g]) + Float(b1 >> 4) * Float(a.halfSums[2 * g + 1]))
                }
            }
        }
        return (acc.0 + acc.1).sum() + offset
    }
}
