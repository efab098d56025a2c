// Only the AVX2 compilation has this file (Package.swift defines QUANTIZED_KERNELS_AVX2 for it alone).
#if QUANTIZED_KERNELS_AVX2
import _Builtin_intrinsics.intel

/// The row kernels of `QuantizedRows` with 8-bit products: the weights unpacked into 32 bytes in element order,
/// multiplied with the activations' bytes by `vpmaddubsw` (unsigned × signed bytes, adjacent pairs summed to 16
/// bits) and widened by `vpmaddwd` with ones. LLVM does not form `vpmaddubsw` from Swift's SIMD types, so this
/// file calls Clang's intrinsics, which is why it is compiled for AVX2 only.
///
/// Lane k of a group's eight 32-bit sums is Σ of elements 4k…4k+3, the same integers the 16-bit kernels of
/// `QuantizedRows` produce; the float part below repeats theirs operation for operation (a multiply then an add,
/// never fused), so both compilations still give the same bits. No pair sum saturates: unsigned weights are at
/// most 63 here, and signed ones go through the sign trick (|w| as the unsigned side, x negated where w < 0),
/// at most 2 · 128 · 127 = 32512.
///
/// Self-contained on purpose: debug builds compile each file on its own, and a helper from another file would be
/// a call in every group.
enum ByteDotProducts {
    typealias Bytes = __m256i
    typealias Floats = SIMD8<Float>

    /// Computes the rows and returns true, or returns false for a type this file has no kernel for.
    @inline(never)
    static func compute(type: UInt32, matrix m: QuantizedMatrix, rows: Range<Int>, activations a: QuantizedActivations,
                        into y: UnsafeMutablePointer<Float>) -> Bool {
        switch type {
        case 2: q4_0(m, rows, a, y)
        case 3: q4_1(m, rows, a, y)
        case 6: q5_0(m, rows, a, y)
        case 7: q5_1(m, rows, a, y)
        case 8: q8_0(m, rows, a, y)
        case 20: iq4_nl(m, rows, a, y)
        case 10: for r in rows { y[r] = q2_K(m.row(r), m.groups, a) }
        case 11: for r in rows { y[r] = q3_K(m.row(r), m.groups, a) }
        case 12: for r in rows { y[r] = q45_K(m.row(r), m.groups, a, highBits: false) }
        case 13: for r in rows { y[r] = q45_K(m.row(r), m.groups, a, highBits: true) }
        case 14: for r in rows { y[r] = q6_K(m.row(r), m.groups, a) }
        case 23: for r in rows { y[r] = iq4_xs(m.row(r), m.groups, a) }
        default: return false
        }
        return true
    }

    // MARK: Products

    /// Group g's eight partial sums of w · x, w unsigned bytes: exact as floats (|sum| < 2²⁴).
    @inline(__always) static func dot(_ w: Bytes, _ a: QuantizedActivations, _ g: Int) -> Floats {
        let pairs = _mm256_maddubs_epi16(w, load(a.bytes + 32 &* g, 0))
        return _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)))
    }

    /// The same for signed weights: `vpmaddubsw` needs one side unsigned, so the signs move to the activations.
    @inline(__always) static func signedDot(_ w: Bytes, _ a: QuantizedActivations, _ g: Int) -> Floats {
        let x = load(a.bytes + 32 &* g, 0)
        let pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w))
        return _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)))
    }

    // MARK: Unpacking

    @inline(__always) static func load(_ p: UnsafeRawPointer, _ offset: Int) -> Bytes {
        p.loadUnaligned(fromByteOffset: offset, as: Bytes.self)
    }

    @inline(__always) static func bytes(_ value: Int8) -> Bytes { _mm256_set1_epi8(CChar(value)) }

    /// The 32 nibbles of 16 bytes in the legacy order (element j in byte j's low nibble, 16 + j in its high one).
    @inline(__always) static func legacyNibbles(_ p: UnsafeRawPointer, _ offset: Int) -> Bytes {
        let packed = p.loadUnaligned(fromByteOffset: offset, as: __m128i.self)
        let both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed)
        return _mm256_and_si256(both, bytes(0x0F))
    }

    /// 0xFF in byte e where bit e of `bits` is set, else 0.
    @inline(__always) static func byteMask(_ bits: UInt32) -> Bytes {
        // Byte e takes byte e / 8 of the word, keeps bit e % 8 of it and compares it with that bit.
        let word = _mm256_set1_epi32(Int32(bitPattern: bits))
        let spread = _mm256_shuffle_epi8(word, _mm256_set_epi64x(0x0303_0303_0303_0303, 0x0202_0202_0202_0202,
                                                                 0x0101_0101_0101_0101, 0))
        let bit = _mm256_set1_epi64x(Int64(bitPattern: 0x8040_2010_0804_0201))
        return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit)
    }

    /// Bits `shift ..< shift + width` of each of 32 bytes, `mask` the width's ones.
    @inline(__always) static func field(_ v: Bytes, _ shift: Int32, _ mask: Int8) -> Bytes {
        _mm256_and_si256(_mm256_srli_epi16(v, shift), bytes(mask))
    }

    /// The four-bit IQ4 indices of 16 bytes in the legacy order, looked up in the codebook.
    @inline(__always) static func iq4Values(_ p: UnsafeRawPointer, _ offset: Int) -> Bytes {
        _mm256_shuffle_epi8(_mm256_set_epi8(113, 89, 69, 53, 38, 25, 13, 1, -10, -22, -35, -49, -65, -83, -104, -127,
                                            113, 89, 69, 53, 38, 25, 13, 1, -10, -22, -35, -49, -65, -83, -104, -127),
                            legacyNibbles(p, offset))
    }

    // MARK: Scalars and sums

    @inline(__always) static func half(_ p: UnsafeRawPointer, _ offset: Int) -> Float {
        Float(Float16(bitPattern: UInt16(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt16.self))))
    }

    /// Eight lanes of `s0` then eight of `s1` (the scales of a group's two halves).
    @inline(__always) static func halves(_ s0: Float, _ s1: Float) -> Floats {
        Floats(lowHalf: SIMD4(repeating: s0), highHalf: SIMD4(repeating: s1))
    }

    /// Adds group g's term to the chain of its parity (two chains, so consecutive groups overlap).
    @inline(__always) static func add(_ acc: inout (Floats, Floats), _ g: Int, _ term: Floats) {
        if g & 1 == 0 { acc.0 += term } else { acc.1 += term }
    }

    /// The lanes added as a tree: halves, then quarters, as `QuantizedRows.horizontalSum`.
    @inline(__always) static func horizontalSum(_ v: Floats) -> Float {
        let four = v.lowHalf + v.highHalf
        let two = four.lowHalf + four.highHalf
        return two[0] + two[1]
    }

    @inline(__always) static func forEachGroup(_ body: (Int) -> Void) {
        body(0); body(1); body(2); body(3); body(4); body(5); body(6); body(7)
    }

    @inline(__always) static func eight(_ p: UnsafePointer<Float>) -> Floats {
        UnsafeRawPointer(p).loadUnaligned(as: Floats.self)
    }
}

/// The 32-value block types (ggml-common.h).
extension ByteDotProducts {
    @inline(never) static func q4_0(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        legacy(m, rows, a, y, blockBytes: 18, minimum: false) { block, g in
            signedDot(_mm256_sub_epi8(legacyNibbles(block, 2), bytes(8)), a, g)
        }
    }

    @inline(never) static func q4_1(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        legacy(m, rows, a, y, blockBytes: 20, minimum: true) { block, g in dot(legacyNibbles(block, 4), a, g) }
    }

    @inline(never) static func q5_0(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        legacy(m, rows, a, y, blockBytes: 22, minimum: false) { block, g in
            // nibble − 16 where the fifth bit is clear is the nibble with its top four bits set (two's complement).
            let clear = _mm256_andnot_si256(byteMask(UInt32(littleEndian: block.loadUnaligned(fromByteOffset: 2, as: UInt32.self))),
                                            bytes(-16))
            return signedDot(_mm256_or_si256(legacyNibbles(block, 6), clear), a, g)
        }
    }

    @inline(never) static func q5_1(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        legacy(m, rows, a, y, blockBytes: 24, minimum: true) { block, g in
            let set = _mm256_and_si256(byteMask(UInt32(littleEndian: block.loadUnaligned(fromByteOffset: 4, as: UInt32.self))), bytes(16))
            return dot(_mm256_or_si256(legacyNibbles(block, 8), set), a, g)
        }
    }

    @inline(never) static func q8_0(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        legacy(m, rows, a, y, blockBytes: 34, minimum: false) { block, g in signedDot(load(block, 2), a, g) }
    }

    @inline(never) static func iq4_nl(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        legacy(m, rows, a, y, blockBytes: 18, minimum: false) { block, g in signedDot(iq4Values(block, 2), a, g) }
    }

    /// Rows of blocks of `blockBytes`: a half scale d at 0, with `minimum` a half m at 2 (value = d·q + m); `products`
    /// gives a block's eight integer sums. The float part is `QuantizedRows.legacy`'s.
    @inline(__always)
    static func legacy(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>,
                       blockBytes: Int, minimum: Bool, _ products: (UnsafeRawPointer, Int) -> Floats) {
        @inline(__always) func accumulate(_ w: UnsafeRawPointer, _ g: Int, _ sums: inout Floats, _ minimums: inout Float) {
            let block = w + blockBytes &* g
            sums += products(block, g) * (half(block, 0) * a.scales[g])
            if minimum { minimums += half(block, 2) * a.sums[g] }
        }
        for r in rows {
            let w = m.row(r)
            var sums = (Floats(), Floats()), minimums: (Float, Float) = (0, 0)
            var g = 0
            while g &+ 1 < m.groups {
                accumulate(w, g, &sums.0, &minimums.0)
                accumulate(w, g &+ 1, &sums.1, &minimums.1)
                g &+= 2
            }
            if g < m.groups { accumulate(w, g, &sums.0, &minimums.0) }
            let total = horizontalSum(sums.0 + sums.1)
            y[r] = minimum ? total + (minimums.0 + minimums.1) : total
        }
    }
}

/// The 256-value super-block types (ggml-common.h); the float parts are `QuantizedRows`' of the same name.
extension ByteDotProducts {
    /// Q4_K's and Q5_K's eight 6-bit scales and minimums from their 12 packed bytes (`get_scale_min_k4`).
    @inline(__always) static func scalesAndMinimums(_ p: UnsafeRawPointer) -> (scales: Floats, minimums: Floats) {
        let w0 = UInt32(littleEndian: p.loadUnaligned(as: UInt32.self))
        let w1 = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        let w2 = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        let six: UInt32 = 0x3F3F_3F3F, nibble: UInt32 = 0x0F0F_0F0F, two: UInt32 = 0x0303_0303
        let scales = SIMD2<UInt32>(w0 & six, (w2 & nibble) | ((w0 >> 6) & two) << 4)
        let minimums = SIMD2<UInt32>(w1 & six, ((w2 >> 4) & nibble) | ((w1 >> 6) & two) << 4)
        // Widened and converted by instructions: the generic SIMD conversion was a call per super-block.
        @inline(__always) func floats(_ v: SIMD2<UInt32>) -> Floats {
            _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(Int64(bitPattern: UInt64(v[0]) | UInt64(v[1]) << 32))))
        }
        return (floats(scales), floats(minimums))
    }

    /// Σ q over each of the eight groups from `g`, as floats (integer sums, so exact whatever the order).
    @inline(__always) static func groupSums(_ a: QuantizedActivations, _ g: Int) -> Floats {
        let halves = UnsafeRawPointer(a.halfSums + 2 * g)
        // Pairs summed within each 128-bit lane: groups 0 1 4 5 | 2 3 6 7, put back in order by the permute.
        let sums = _mm256_hadd_epi32(load(halves, 0), load(halves, 32))
        return _mm256_cvtepi32_ps(_mm256_permutevar8x32_epi32(sums, _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7)))
    }

    @inline(__always) static func q45_K(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations, highBits: Bool) -> Float {
        var acc = (Floats(), Floats())
        var minimums = Floats()
        let size = highBits ? 176 : 144, qs = highBits ? 48 : 16
        for s in 0..<(groups / 8) {
            let block = w + size * s
            let steps = eight(a.scales + 8 * s)
            let (scales, mins) = scalesAndMinimums(block + 4)
            let factors = scales * half(block, 0) * steps
            minimums += mins * half(block, 2) * steps * groupSums(a, 8 * s)
            let high = highBits ? load(block, 16) : _mm256_setzero_si256()
            @inline(__always) func group(_ j: Int) {
                var q = field(load(block, qs + 32 * (j / 2)), Int32(4 * (j % 2)), 0x0F)
                if highBits { q = _mm256_or_si256(q, _mm256_slli_epi16(field(high, Int32(j), 1), 4)) }
                add(&acc, j, dot(q, a, 8 * s + j) * factors[j])
            }
            forEachGroup(group)
        }
        return horizontalSum(acc.0 + acc.1) - horizontalSum(minimums)
    }

    static func q6_K(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations) -> Float {
        var acc = (Floats(), Floats())
        for s in 0..<(groups / 8) {
            let block = w + 210 * s
            let factors = half(block, 208) * eight(a.scales + 8 * s)
            let scales = block + 192
            @inline(__always) func group(_ j: Int) {
                let h = j / 4, k = j % 4
                let low = field(load(block, 64 * h + 32 * (k % 2)), k < 2 ? 0 : 4, 0x0F)
                let high = field(load(block, 128 + 32 * h), Int32(2 * k), 3)
                let q = _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(high, 4)), bytes(32))
                let s0 = Float(scales.load(fromByteOffset: 2 * j, as: Int8.self))
                let s1 = Float(scales.load(fromByteOffset: 2 * j + 1, as: Int8.self))
                add(&acc, j, signedDot(q, a, 8 * s + j) * (halves(s0, s1) * factors[j]))
            }
            forEachGroup(group)
        }
        return horizontalSum(acc.0 + acc.1)
    }

    static func q3_K(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations) -> Float {
        var acc = (Floats(), Floats())
        for s in 0..<(groups / 8) {
            let block = w + 110 * s
            let factors = half(block, 108) * eight(a.scales + 8 * s)
            let packed = block + 96
            @inline(__always) func scale(_ k: Int) -> Float {
                let low = k < 8 ? packed.load(fromByteOffset: k, as: UInt8.self) & 0x0F : packed.load(fromByteOffset: k - 8, as: UInt8.self) >> 4
                let high = (packed.load(fromByteOffset: 8 + k % 4, as: UInt8.self) >> UInt8(2 * (k / 4))) & 3
                return Float(Int16(low | high << 4) - 32)
            }
            let mask = load(block, 0)
            @inline(__always) func group(_ j: Int) {
                let low = field(load(block, 32 + 32 * (j / 4)), Int32(2 * (j % 4)), 3)
                let high = field(mask, Int32(j), 1)
                let q = _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(high, 2)), bytes(4))
                add(&acc, j, signedDot(q, a, 8 * s + j) * (halves(scale(2 * j), scale(2 * j + 1)) * factors[j]))
            }
            forEachGroup(group)
        }
        return horizontalSum(acc.0 + acc.1)
    }

    static func q2_K(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations) -> Float {
        var acc = (Floats(), Floats())
        var offset: Float = 0
        for s in 0..<(groups / 8) {
            let block = w + 84 * s
            let d = half(block, 80), dmin = half(block, 82)
            @inline(__always) func group(_ j: Int) {
                let g = 8 * s + j
                let q = field(load(block, 16 + 32 * (j / 4)), Int32(2 * (j % 4)), 3)
                let b0 = block.load(fromByteOffset: 2 * j, as: UInt8.self), b1 = block.load(fromByteOffset: 2 * j + 1, as: UInt8.self)
                add(&acc, j, dot(q, a, g) * (halves(Float(b0 & 0x0F), Float(b1 & 0x0F)) * (d * a.scales[g])))
                offset -= dmin * a.scales[g] * (Float(b0 >> 4) * Float(a.halfSums[2 * g]) + Float(b1 >> 4) * Float(a.halfSums[2 * g + 1]))
            }
            forEachGroup(group)
        }
        return horizontalSum(acc.0 + acc.1) + offset
    }

    static func iq4_xs(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations) -> Float {
        var acc = (Floats(), Floats())
        for s in 0..<(groups / 8) {
            let block = w + 136 * s
            let d = half(block, 0)
            let high = UInt16(littleEndian: block.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
            @inline(__always) func group(_ j: Int) {
                let g = 8 * s + j
                let low = (block.load(fromByteOffset: 4 + j / 2, as: UInt8.self) >> UInt8(4 * (j % 2))) & 0x0F
                let scale = Int(low | UInt8((high >> UInt16(2 * j)) & 3) << 4) - 32
                add(&acc, j, signedDot(iq4Values(block, 8 + 16 * j), a, g) * (d * Float(scale) * a.scales[g]))
            }
            forEachGroup(group)
        }
        return horizontalSum(acc.0 + acc.1)
    }
}
#endif
