// Only the AVX-512 compilation has this code (Package.swift defines QUANTIZED_KERNELS_AVX512 for the target).
#if QUANTIZED_KERNELS_AVX512
import _Builtin_intrinsics.intel

/// The decode row kernels of the 32-value block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) with `vpdpbusd`, two groups
/// per 512-bit instruction, giving the bits of the AVX2 kernels (`ByteDotProducts` in QuantizedKernelsAVX2).
///
/// `vpdpbusd` multiplies unsigned by signed bytes and adds each four neighbours into one 32-bit lane: lane k of a
/// group is Σ of its elements 4k…4k+3, the very integers `vpmaddubsw` and `vpmaddwd` give the AVX2 kernels. The
/// weights go in as unsigned bytes w + b (b = 8, 16 or 128 for the signed types, 0 for those with a minimum) and
/// each lane starts from −b · Σ of its four activations, computed once per call for all rows, so it ends as
/// Σ w·x exactly (at most 4 · 255 · 128 in magnitude, far inside Int32). The float part is the AVX2 one operation
/// for operation: the lanes of even groups in the low half of the accumulator, of odd groups in the high half
/// (its two chains), a multiply then an add, never fused, and the same tree for the final horizontal sum.
///
/// Self-contained on purpose: debug builds compile each file on its own, and a helper from another file would be
/// a call in every group.
public enum VNNIRows {
    /// The GGML type numbers this file has kernels for.
    public static let types: Set<UInt32> = [2, 3, 6, 7, 8]

    /// y[r] for `rows` of the matrix at `blocks` (`rowBytes` a row, `groups` 32-value groups), with the
    /// activations' steps, Q8_1-style sums and bytes in `QuantizedActivations`' layout. Returns false, computing
    /// nothing, for a type without a kernel here.
    @inline(never)
    public static func compute(type: UInt32, blocks: UnsafeRawPointer, rowBytes: Int, groups: Int, rows: Range<Int>,
                               steps: UnsafePointer<Float>, sums: UnsafePointer<Float>, bytes: UnsafePointer<Int8>,
                               into y: UnsafeMutablePointer<Float>) -> Bool {
        let m = Matrix(blocks: blocks, rowBytes: rowBytes, groups: groups)
        let a = Activations(steps: steps, sums: sums, bytes: bytes)
        switch type {
        case 2: legacy(m, rows, a, y, blockBytes: 18, bias: 8, minimum: false) { first, second in nibbles(first, second, 2) }
        case 3: legacy(m, rows, a, y, blockBytes: 20, bias: 0, minimum: true) { first, second in nibbles(first, second, 4) }
        case 6: legacy(m, rows, a, y, blockBytes: 22, bias: 16, minimum: false) { first, second in
            withFifthBits(nibbles(first, second, 6), first, second, 2)
        }
        case 7: legacy(m, rows, a, y, blockBytes: 24, bias: 0, minimum: true) { first, second in
            withFifthBits(nibbles(first, second, 8), first, second, 4)
        }
        case 8: legacy(m, rows, a, y, blockBytes: 34, bias: -128, minimum: false) { first, second in
            _mm512_xor_si512(joined(load(first, 2), load(second, 2)), _mm512_set1_epi8(-128))
        }
        default: return false
        }
        return true
    }

    struct Matrix {
        let blocks: UnsafeRawPointer
        let rowBytes: Int
        let groups: Int
    }

    struct Activations {
        let steps: UnsafePointer<Float>
        let sums: UnsafePointer<Float>
        let bytes: UnsafePointer<Int8>

        /// Groups g and g + 1 (only g, the rest zero, when `single`).
        @inline(__always) func pair(_ g: Int, single: Bool) -> __m512i {
            let p = UnsafeRawPointer(bytes + 32 &* g)
            return single ? _mm512_maskz_loadu_epi8(0xFFFF_FFFF, p) : p.loadUnaligned(as: __m512i.self)
        }
    }

    /// Rows of blocks of `blockBytes`: a half scale d at 0, with `minimum` a half m at 2 (value = d·q + m);
    /// `unpack` gives two blocks' 64 weights, each plus `bias`, as unsigned bytes in element order (`bias` is
    /// read as an unsigned byte: −128 stands for 128).
    @inline(__always)
    static func legacy(_ m: Matrix, _ rows: Range<Int>, _ a: Activations, _ y: UnsafeMutablePointer<Float>, blockBytes: Int,
                       bias: Int8, minimum: Bool, _ unpack: (UnsafeRawPointer, UnsafeRawPointer) -> __m512i) {
        let pairs = (m.groups + 1) / 2
        withUnsafeTemporaryAllocation(of: __m512i.self, capacity: pairs) { starts in
            // Each lane's start, −bias · Σ of its four activations: the same for every row.
            let b = _mm512_set1_epi8(bias)
            for p in 0..<pairs {
                let x = a.pair(2 &* p, single: 2 &* p &+ 1 == m.groups)
                starts[p] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), b, x))
            }
            for r in rows {
                let w = m.blocks + r &* m.rowBytes
                var sums = _mm512_setzero_ps()
                var minimums: (Float, Float) = (0, 0)
                for p in 0..<pairs {
                    let g = 2 &* p
                    let single = g &+ 1 == m.groups
                    let first = w + blockBytes &* g
                    let second = single ? first : first + blockBytes
                    let products = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(starts[p], unpack(first, second), a.pair(g, single: single)))
                    let low = half(first, 0) * a.steps[g]
                    let high = single ? low : half(second, 0) * a.steps[g &+ 1]
                    let terms = _mm512_mul_ps(products, _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(low), _mm512_set1_ps(high)))
                    sums = _mm512_mask_add_ps(sums, single ? 0x00FF : 0xFFFF, sums, terms)
                    if minimum {
                        minimums.0 += half(first, 2) * a.sums[g]
                        if !single { minimums.1 += half(second, 2) * a.sums[g &+ 1] }
                    }
                }
                let total = horizontalSum(sums.lowHalf + sums.highHalf)
                y[r] = minimum ? total + (minimums.0 + minimums.1) : total
            }
        }
    }

    /// The lanes added as a tree: halves, then quarters (`ByteDotProducts.horizontalSum`).
    @inline(__always) static func horizontalSum(_ v: SIMD8<Float>) -> Float {
        let four = v.lowHalf + v.highHalf
        let two = four.lowHalf + four.highHalf
        return two[0] + two[1]
    }

    @inline(__always) static func load(_ p: UnsafeRawPointer, _ offset: Int) -> __m256i {
        p.loadUnaligned(fromByteOffset: offset, as: __m256i.self)
    }

    @inline(__always) static func half(_ p: UnsafeRawPointer, _ offset: Int) -> Float {
        Float(Float16(bitPattern: UInt16(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt16.self))))
    }

    /// The 32 nibbles of 16 bytes at `offset` of each block in the legacy order (element j in byte j's low
    /// nibble, 16 + j in its high one): the first block's 32 bytes, then the second's.
    @inline(__always) static func nibbles(_ first: UnsafeRawPointer, _ second: UnsafeRawPointer, _ offset: Int) -> __m512i {
        let packed = _mm256_set_m128i(second.loadUnaligned(fromByteOffset: offset, as: __m128i.self),
                                      first.loadUnaligned(fromByteOffset: offset, as: __m128i.self))
        // 128-bit lanes: first low, second low, first high, second high; then put in block order.
        let both = joined(packed, _mm256_srli_epi16(packed, 4))
        let ordered = _mm512_permutexvar_epi64(_mm512_set_epi64(7, 6, 3, 2, 5, 4, 1, 0), both)
        return _mm512_and_si512(ordered, _mm512_set1_epi8(0x0F))
    }

    /// `low` then `high` (one `vinserti64x4`; Clang's intrinsic for it is a macro, which Swift cannot call).
    @inline(__always) static func joined(_ low: __m256i, _ high: __m256i) -> __m512i {
        __m512i(lowHalf: low, highHalf: high)
    }

    /// + 16 in byte e where bit e of the blocks' 32-bit field at `offset` is set (the fifth bit of element e).
    @inline(__always) static func withFifthBits(_ q: __m512i, _ first: UnsafeRawPointer, _ second: UnsafeRawPointer,
                                                _ offset: Int) -> __m512i {
        let low = UInt64(UInt32(littleEndian: first.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        let high = UInt64(UInt32(littleEndian: second.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        return _mm512_mask_add_epi8(q, low | high << 32, q, _mm512_set1_epi8(16))
    }
}
#endif
