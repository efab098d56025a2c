// Only the AVX-512 compilation has this code (Package.swift defines QUANTIZED_KERNELS_AVX512 for the target).
#if QUANTIZED_KERNELS_AVX512
import _Builtin_intrinsics.intel

/// The decode row kernels of the 256-value super-block types Q4_K, Q5_K and Q6_K with 512-bit `vpdpbusd`
/// (AVX-512 VNNI), giving the bits of the AVX2 kernels (`ByteDotProducts.q45_K` and `q6_K` in QuantizedKernelsAVX2).
///
/// Those kernels keep two float chains per row, one for the even groups of 32 and one for the odd ones, each
/// group adding its eight lanes (lane k = Σ of elements 4k…4k+3, exact integers) times the group's factor. A
/// 512-bit register holds both chains side by side: lanes 0–7 the even one, 8–15 the odd one. Groups 2i and 2i+1
/// are neighbours in the activations (64 bytes, one load) and in every K-quant layout (one 32-byte run of nibbles,
/// or two halves of a 64-byte run for Q6_K), so one `vpdpbusd`, one conversion, one multiply and one add serve the
/// pair, where the AVX2 kernels spend `vpmaddubsw`, `vpmaddwd`, a conversion, a multiply and an add on each group.
/// Every float lane sees the same operations on the same values in the same order as before: (group sum as a
/// float) · factor, added to its chain group after group, so the bits do not change.
///
/// Also as in those kernels: the factor of a group is (scale · d) · step (Q4_K, Q5_K) or (scale of the half) ·
/// (d · step) (Q6_K); the minimum term of Q4_K and Q5_K is ((minimum · dmin) · step) · Σ q, in eight lanes added
/// super-block after super-block and subtracted at the end; the end sums the two chains, then halves and quarters.
///
/// What is shared by every row is made once per call: the group sums Σ q of the activations as floats (Q4_K,
/// Q5_K) and, for Q6_K, each lane's start −32 · Σ of its four activations, so that `vpdpbusd` of the unsigned
/// six-bit values q gives Σ (q − 32) · x exactly (|sum| ≤ 4 · 63 · 127 + 32 · 4 · 127, far inside Int32).
///
/// Rows go one at a time. Two at a time, sharing the activations' loads, ran twice as fast while the weights sat
/// in L2 but a third slower once they streamed from memory (two interleaved streams, read 144 to 210 bytes at a
/// time each, seem to defeat the prefetcher).
///
/// Self-contained on purpose: debug builds compile each file on its own, and a helper from another file would be
/// a call in every group.
public enum VNNISuperBlockRows {
    /// The GGML type numbers this file has kernels for.
    public static let types: Set<UInt32> = [12, 13, 14]

    /// y[r] for `rows` of the matrix at `blocks` (`rowBytes` a row, `groups` 32-value groups, a multiple of 8),
    /// with the activations' steps, half sums and bytes in `QuantizedActivations`' layout. Returns false,
    /// computing nothing, for a type without a kernel here.
    @inline(never)
    public static func compute(type: UInt32, blocks: UnsafeRawPointer, rowBytes: Int, groups: Int, rows: Range<Int>,
                               steps: UnsafePointer<Float>, halfSums: UnsafePointer<Int32>, bytes: UnsafePointer<Int8>,
                               into y: UnsafeMutablePointer<Float>) -> Bool {
        guard types.contains(type) else { return false }
        precondition(groups % 8 == 0, "super-block rows span whole super-blocks")
        let m = Matrix(blocks: blocks, rowBytes: rowBytes, superBlocks: groups / 8)
        // The permutations' indices in memory the kernels only read through a pointer: given as constants, LLVM
        // took the permutes apart into scalar multiplies and shuffles, at a third of the speed.
        withUnsafeTemporaryAllocation(of: __m512i.self, capacity: Indices.count) { indices in
            let indices = indices.baseAddress!
            Indices.fill(indices)
            compute(type, m, groups, rows, steps, halfSums, bytes, indices, y)
        }
        return true
    }

    @inline(__always)
    static func compute(_ type: UInt32, _ m: Matrix, _ groups: Int, _ rows: Range<Int>, _ steps: UnsafePointer<Float>,
                        _ halfSums: UnsafePointer<Int32>, _ bytes: UnsafePointer<Int8>, _ indices: UnsafePointer<__m512i>,
                        _ y: UnsafeMutablePointer<Float>) {
        switch type {
        case 14:
            withUnsafeTemporaryAllocation(of: __m512i.self, capacity: groups / 2 + groups / 8) { shared in
                let starts = shared.baseAddress!, halfSteps = UnsafeMutableRawPointer(starts + groups / 2).assumingMemoryBound(to: Float.self)
                // −32 · Σ of each lane's four activations, two groups a vector.
                let bias = _mm512_set1_epi8(32)
                for pair in 0..<(groups / 2) {
                    let x = UnsafeRawPointer(bytes + 64 &* pair).loadUnaligned(as: __m512i.self)
                    starts[pair] = _mm512_sub_epi32(_mm512_setzero_si512(), dot(_mm512_setzero_si512(), bias, x))
                }
                // Each group's step for each of its two halves of 16, 16 floats a super-block.
                for g in 0..<groups { (halfSteps[2 &* g], halfSteps[2 &* g &+ 1]) = (steps[g], steps[g]) }
                q6_K(m, rows, Activations(table: halfSteps, starts: starts, bytes: bytes, indices: indices), y)
            }
        default:
            withUnsafeTemporaryAllocation(of: Float.self, capacity: 4 * groups) { table in
                let sums = table.baseAddress!
                // Per super-block its eight steps twice, then its eight group sums Σ q twice (integer sums, then one
                // conversion: the values `ByteDotProducts.groupSums` gives).
                for s in 0..<(groups / 8) {
                    for j in 0..<8 {
                        let g = 8 &* s &+ j, total = Float(halfSums[2 &* g] &+ halfSums[2 &* g &+ 1])
                        (sums[32 &* s &+ j], sums[32 &* s &+ 8 &+ j]) = (steps[g], steps[g])
                        (sums[32 &* s &+ 16 &+ j], sums[32 &* s &+ 24 &+ j]) = (total, total)
                    }
                }
                let a = Activations(table: sums, starts: nil, bytes: bytes, indices: indices)
                if type == 12 { q4_K(m, rows, a, y) } else { q5_K(m, rows, a, y) }
            }
        }
    }

    struct Matrix {
        let blocks: UnsafeRawPointer
        let rowBytes: Int
        let superBlocks: Int

        @inline(__always) func row(_ r: Int) -> UnsafeRawPointer { blocks + r &* rowBytes }
    }

    struct Activations {
        /// Per super-block, what its rows share. Q4_K, Q5_K: its eight steps twice, then its eight group sums Σ q
        /// (as floats) twice, 32 floats; Q6_K: each group's step for each of its two halves, 16 floats.
        let table: UnsafePointer<Float>
        /// Each lane's start, two groups a vector (Q6_K).
        let starts: UnsafePointer<__m512i>?
        let bytes: UnsafePointer<Int8>
        /// `Indices`' vectors.
        let indices: UnsafePointer<__m512i>

        /// Groups 2·pair and 2·pair + 1: 64 bytes.
        @inline(__always) func pair(_ pair: Int) -> __m512i { UnsafeRawPointer(bytes + 64 &* pair).loadUnaligned(as: __m512i.self) }
    }

    typealias Floats = SIMD8<Float>
    typealias Wide = SIMD16<Float>

    // MARK: Q4_K and Q5_K

    @inline(never) static func q4_K(_ m: Matrix, _ rows: Range<Int>, _ a: Activations, _ y: UnsafeMutablePointer<Float>) {
        for r in rows { y[r] = q45_K(m.row(r), m.superBlocks, a, highBits: false) }
    }

    @inline(never) static func q5_K(_ m: Matrix, _ rows: Range<Int>, _ a: Activations, _ y: UnsafeMutablePointer<Float>) {
        for r in rows { y[r] = q45_K(m.row(r), m.superBlocks, a, highBits: true) }
    }

    @inline(__always)
    static func q45_K(_ w: UnsafeRawPointer, _ superBlocks: Int, _ a: Activations, highBits: Bool) -> Float {
        let size = highBits ? 176 : 144
        let doubled = a.indices[Indices.pair], nibbleShifts = a.indices[Indices.nibbleShifts]
        var acc = Wide(), minimums = Wide()
        for s in 0..<superBlocks {
            let block = w + size &* s
            let shared = UnsafeRawPointer(a.table + 32 &* s)
            // Lanes 0–7: the group factors (scale · d) · step; 8–15: (minimum · dmin) · step.
            let factors = _mm512_mul_ps(_mm512_mul_ps(scalesAndMinimums(block + 4),
                                                      _mm512_permutexvar_ps(doubled, _mm512_broadcast_f32x4(halves(block)))),
                                        shared.loadUnaligned(as: Wide.self))
            // Lanes 8–15 carry the minimum terms, · Σ q; lanes 0–7 are never read.
            minimums = _mm512_add_ps(minimums, _mm512_mul_ps(factors, shared.loadUnaligned(fromByteOffset: 64, as: Wide.self)))
            let high = highBits ? fifthBits(block) : _mm512_setzero_si512()
            @inline(__always) func pair(_ i: Int) {
                let products = dot(_mm512_setzero_si512(), values45(block, high, i, nibbleShifts, highBits: highBits), a.pair(4 &* s &+ i))
                acc = _mm512_add_ps(acc, scaled(products, factors, a.indices[Indices.pair &+ i]))
            }
            pair(0); pair(1); pair(2); pair(3)
        }
        let swap = a.indices[Indices.swap]
        return end(acc, swap) - horizontalSum(_mm512_castps512_ps256(_mm512_permutexvar_ps(swap, minimums)))
    }

    /// d and dmin, the block's first two halves, as floats in lanes 0 and 1 (put in every 128 bits before the
    /// permute: left undefined, LLVM filled them with three extra instructions).
    @inline(__always) static func halves(_ block: UnsafeRawPointer) -> SIMD4<Float> {
        _mm_cvtph_ps(_mm_cvtsi32_si128(Int32(bitPattern: UInt32(littleEndian: block.loadUnaligned(as: UInt32.self)))))
    }

    /// Groups 2i (the low nibbles of 32 bytes) and 2i + 1 (the high ones) as 64 unsigned bytes, with the fifth
    /// bits of Q5_K from `high` (`fifthBits`).
    @inline(__always)
    static func values45(_ block: UnsafeRawPointer, _ high: __m512i, _ i: Int, _ nibbleShifts: __m512i, highBits: Bool) -> __m512i {
        // The 32 bytes in both halves, the upper one shifted right by 4 (64-bit lanes: the bits a byte takes from
        // its neighbour are masked off).
        let packed = _mm512_broadcast_i64x4(block.loadUnaligned(fromByteOffset: (highBits ? 48 : 16) &+ 32 &* i, as: __m256i.self))
        let nibbles = _mm512_and_si512(_mm512_srlv_epi64(packed, nibbleShifts), _mm512_set1_epi8(0x0F))
        guard highBits else { return nibbles }
        // Bit 2i of each byte (bit 2i + 1 in the upper half) moved to bit 4: 16-bit shifts by at most 2 to the
        // right or 4 to the left keep bit 4 inside its own byte.
        let moved = i == 0 ? _mm512_slli_epi16(high, 4) : i == 1 ? _mm512_slli_epi16(high, 2) : i == 2 ? high : _mm512_srli_epi16(high, 2)
        return _mm512_or_si512(nibbles, _mm512_and_si512(moved, _mm512_set1_epi8(0x10)))
    }

    /// Q5_K's 32 bytes of fifth bits (bit j of byte l for element l of group j) in the lower half and the same
    /// shifted right by one in the upper half, so that bit 2i of a byte is group 2i's bit below and 2i + 1's above.
    @inline(__always) static func fifthBits(_ block: UnsafeRawPointer) -> __m512i {
        let qh = block.loadUnaligned(fromByteOffset: 16, as: __m256i.self)
        return joined(qh, _mm256_srli_epi16(qh, 1))
    }

    /// Q4_K's and Q5_K's eight 6-bit scales then eight minimums, as floats, from their 12 packed bytes
    /// (`get_scale_min_k4`), the values `ByteDotProducts.scalesAndMinimums` reads: as 32-bit words w0, w1, w2,
    /// scales 0–3 are w0 & 0x3F…, 4–7 (w2 & 0x0F…) | ((w0 >> 6) & 0x03…) << 4, minimums likewise from w1 and w2 >> 4.
    @inline(__always) static func scalesAndMinimums(_ p: UnsafeRawPointer) -> Wide {
        // Read 16 bytes (the block goes on past the 12), keep the first three words.
        let w = unsafeBitCast(p.loadUnaligned(as: __m128i.self), to: SIMD4<UInt32>.self)
        let low = SIMD4<UInt32>(w[0], w[0], w[1], w[1]), packed = SIMD4<UInt32>(w[0], w[2], w[1], w[2] >> 4)
        let six = SIMD4<UInt32>(repeating: 0x3F3F_3F3F), nibble = SIMD4<UInt32>(repeating: 0x0F0F_0F0F), two = SIMD4<UInt32>(repeating: 0x0303_0303)
        let high = (packed & nibble) | ((low &>> 6) & two) &<< 4
        let bytes = (packed & six).replacing(with: high, where: SIMD4<Int32>(0, -1, 0, -1) .!= 0)
        return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(unsafeBitCast(bytes, to: __m128i.self)))
    }

    // MARK: Q6_K

    @inline(never) static func q6_K(_ m: Matrix, _ rows: Range<Int>, _ a: Activations, _ y: UnsafeMutablePointer<Float>) {
        for r in rows { y[r] = q6_K(m.row(r), m.superBlocks, a) }
    }

    @inline(__always) static func q6_K(_ w: UnsafeRawPointer, _ superBlocks: Int, _ a: Activations) -> Float {
        let starts = a.starts!
        var acc = Wide()
        for s in 0..<superBlocks {
            let block = w + 210 &* s
            let factors = factors6(block, UnsafeRawPointer(a.table + 16 &* s).loadUnaligned(as: Wide.self))
            let high = (sixthBits(block, 0), sixthBits(block, 1))
            @inline(__always) func pair(_ i: Int) {
                let products = dot(starts[4 &* s &+ i], values6(block, i, i < 2 ? high.0 : high.1), a.pair(4 &* s &+ i))
                acc = _mm512_add_ps(acc, scaled(products, factors, a.indices[Indices.quarter &+ i]))
            }
            pair(0); pair(1); pair(2); pair(3)
        }
        return end(acc, a.indices[Indices.swap])
    }

    /// A Q6_K super-block's sixteen factors, one per 16 values: scale · (d · step), as `halves(s0, s1) · factors[j]`
    /// multiplies them.
    @inline(__always) static func factors6(_ block: UnsafeRawPointer, _ halfSteps: Wide) -> Wide {
        let scales = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(block.loadUnaligned(fromByteOffset: 192, as: __m128i.self)))
        return _mm512_mul_ps(scales, _mm512_mul_ps(Wide(repeating: half(block, 208)), halfSteps))
    }

    /// Groups 2i and 2i + 1 as 64 unsigned six-bit values: low four bits from ql (64 bytes at 64·(i / 2), the low
    /// nibbles for even i), high two from `high` (`sixthBits`).
    @inline(__always) static func values6(_ block: UnsafeRawPointer, _ i: Int, _ high: __m512i) -> __m512i {
        let low = block.loadUnaligned(fromByteOffset: 64 &* (i / 2), as: __m512i.self)
        let nibbles = _mm512_and_si512(i % 2 == 0 ? low : _mm512_srli_epi16(low, 4), _mm512_set1_epi8(0x0F))
        // Bits 0–1 (even i) or 4–5 (odd i) of `high` moved to bits 4–5; 16-bit shifts that keep them in their byte.
        let moved = i % 2 == 0 ? _mm512_slli_epi16(high, 4) : high
        return _mm512_or_si512(nibbles, _mm512_and_si512(moved, _mm512_set1_epi8(0x30)))
    }

    /// The qh bytes of groups 4h…4h + 3 (32 bytes at 128 + 32h), arranged so that groups 4h and 4h + 2 find their
    /// two bits at 0–1 and 4–5 of the lower half, 4h + 1 and 4h + 3 of the upper half (shifted right by two).
    @inline(__always) static func sixthBits(_ block: UnsafeRawPointer, _ h: Int) -> __m512i {
        let qh = block.loadUnaligned(fromByteOffset: 128 &+ 32 &* h, as: __m256i.self)
        return joined(qh, _mm256_srli_epi16(qh, 2))
    }

    // MARK: Shared

    /// A pair of groups' integer sums as floats times their factors, lane by lane the factor `index` picks.
    @inline(__always) static func scaled(_ sums: __m512i, _ factors: Wide, _ index: __m512i) -> Wide {
        _mm512_mul_ps(_mm512_cvtepi32_ps(sums), _mm512_permutexvar_ps(index, factors))
    }

    /// The permutations of factors, as lanes of 32-bit indices.
    enum Indices {
        /// `pair + i` for groups 2i and 2i + 1 with a factor a group (lanes 0–7 take factor 2i, 8–15 factor 2i + 1).
        static let pair = 0
        /// `quarter + i` for the same with a factor per 16 values (lanes 4k…4k + 3 take factor 4i + k).
        static let quarter = 4
        /// Lanes 8–15 then 0–7: the odd chain beside the even one.
        static let swap = 8
        /// 64-bit lanes: shift 0 in the lower half, 4 in the upper.
        static let nibbleShifts = 9
        static let count = 10

        @inline(__always) static func fill(_ p: UnsafeMutablePointer<__m512i>) {
            let lanes = SIMD16<Int32>(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
            for i in 0..<4 {
                p[pair + i] = unsafeBitCast(Int32(2 * i) &+ lanes / 8, to: __m512i.self)
                p[quarter + i] = unsafeBitCast(Int32(4 * i) &+ lanes / 4, to: __m512i.self)
            }
            p[swap] = unsafeBitCast((lanes &+ 8) & 15, to: __m512i.self)
            p[nibbleShifts] = SIMD8<Int64>(0, 0, 0, 0, 4, 4, 4, 4)
        }
    }

    /// The end of a row: the even and odd chains added, then halves, then quarters (`ByteDotProducts.horizontalSum`).
    /// The upper half comes down by a permute: taken with `highHalf`, LLVM kept lanes of the chains apart as
    /// scalars inside the loop.
    @inline(__always) static func end(_ acc: Wide, _ swap: __m512i) -> Float {
        horizontalSum(_mm512_castps512_ps256(acc + _mm512_permutexvar_ps(swap, acc)))
    }

    @inline(__always) static func horizontalSum(_ v: Floats) -> Float {
        let four = v.lowHalf + v.highHalf
        let two = four.lowHalf + four.highHalf
        return two[0] + two[1]
    }

    /// `low` in the lower 256 bits, `high` in the upper.
    @inline(__always) static func joined(_ low: __m256i, _ high: __m256i) -> __m512i {
        _mm512_mask_broadcast_i64x4(_mm512_castsi256_si512(low), 0xF0, high)
    }

    @inline(__always) static func half(_ p: UnsafeRawPointer, _ offset: Int) -> Float {
        Float(Float16(bitPattern: UInt16(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt16.self))))
    }

    /// `vpdpbusd` on 512 bits: s + Σ of each four u·x (u unsigned, x signed bytes), through the masked intrinsic
    /// with every lane selected (the plain one is a macro Swift cannot call).
    @inline(__always) static func dot(_ s: __m512i, _ u: __m512i, _ x: __m512i) -> __m512i { _mm512_mask_dpbusd_epi32(s, 0xFFFF, u, x) }
}
#endif
