// Only the AVX-512 compilation has this code (Package.swift defines QUANTIZED_KERNELS_AVX512 for the target).
#if QUANTIZED_KERNELS_AVX512
import _Builtin_intrinsics.intel

/// The decode row kernels of the 32-value block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) with 256-bit `vpdpbusd`
/// (AVX-512 VNNI with VL), giving the bits of the AVX2 kernels (`ByteDotProducts` in QuantizedKernelsAVX2).
///
/// `vpdpbusd` multiplies unsigned by signed bytes and adds each four neighbours into one 32-bit lane: lane k of a
/// group is Σ of its elements 4k…4k+3, the very integers `vpmaddubsw` and `vpmaddwd` give the AVX2 kernels. The
/// weights go in as unsigned bytes w + b (b = 8, 16 or 128 for the signed types, 0 for those with a minimum) and
/// each lane starts from −b · Σ of its four activations, computed once per call for all rows, so it ends as
/// Σ w·x exactly (at most 4 · 255 · 128 in magnitude, far inside Int32). That replaces the AVX2 kernels' sign
/// trick (two `vpsignb`), their widening `vpmaddwd` and, for Q5_0/Q5_1, the fifth bits' byte-mask expansion (a
/// masked byte add here). The float part is the AVX2 one operation for operation (two chains by group parity, a
/// multiply then an add, never fused, the same tree for the final horizontal sum).
///
/// On 512 bits (two groups an instruction) the same kernels measured slower once the weights streamed from
/// memory rather than from L2, and on this machine's AMD cores a 512-bit operation is two 256-bit ones.
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
        guard types.contains(type) else { return false }
        let m = Matrix(blocks: blocks, rowBytes: rowBytes, groups: groups)
        let a = Activations(steps: steps, sums: sums, bytes: bytes)
        // Each group's lane starts, made once per call (`legacy`), on the stack.
        withUnsafeTemporaryAllocation(of: __m256i.self, capacity: groups) { shared in
            let shared = shared.baseAddress!
            switch type {
            case 2: q4_0(m, rows, a, shared, y)
            case 3: q4_1(m, rows, a, shared, y)
            case 6: q5_0(m, rows, a, shared, y)
            case 7: q5_1(m, rows, a, shared, y)
            default: q8_0(m, rows, a, shared, y)
            }
        }
        return true
    }

    // One function per type with its unpacking inlined: a closure called per group spilled every register.
    @inline(never) static func q4_0(_ m: Matrix, _ rows: Range<Int>, _ a: Activations, _ shared: UnsafeMutablePointer<__m256i>,
                                    _ y: UnsafeMutablePointer<Float>) {
        legacy(m, rows, a, shared, y, blockBytes: 18, bias: 8, minimum: false) { block in nibbles(block, 2) }
    }

    @inline(never) static func q4_1(_ m: Matrix, _ rows: Range<Int>, _ a: Activations, _ shared: UnsafeMutablePointer<__m256i>,
                                    _ y: UnsafeMutablePointer<Float>) {
        legacy(m, rows, a, shared, y, blockBytes: 20, bias: 0, minimum: true) { block in nibbles(block, 4) }
    }

    @inline(never) static func q5_0(_ m: Matrix, _ rows: Range<Int>, _ a: Activations, _ shared: UnsafeMutablePointer<__m256i>,
                                    _ y: UnsafeMutablePointer<Float>) {
        legacy(m, rows, a, shared, y, blockBytes: 22, bias: 16, minimum: false) { block in withFifthBits(nibbles(block, 6), block, 2) }
    }

    @inline(never) static func q5_1(_ m: Matrix, _ rows: Range<Int>, _ a: Activations, _ shared: UnsafeMutablePointer<__m256i>,
                                    _ y: UnsafeMutablePointer<Float>) {
        legacy(m, rows, a, shared, y, blockBytes: 24, bias: 0, minimum: true) { block in withFifthBits(nibbles(block, 8), block, 4) }
    }

    @inline(never) static func q8_0(_ m: Matrix, _ rows: Range<Int>, _ a: Activations, _ shared: UnsafeMutablePointer<__m256i>,
                                    _ y: UnsafeMutablePointer<Float>) {
        legacy(m, rows, a, shared, y, blockBytes: 34, bias: -128, minimum: false) { block in
            _mm256_xor_si256(block.loadUnaligned(fromByteOffset: 2, as: __m256i.self), _mm256_set1_epi8(-128))
        }
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

        @inline(__always) func group(_ g: Int) -> __m256i { UnsafeRawPointer(bytes + 32 &* g).loadUnaligned(as: __m256i.self) }
    }

    /// Rows of blocks of `blockBytes`: a half scale d at 0, with `minimum` a half m at 2 (value = d·q + m);
    /// `unpack` gives a block's 32 weights, each plus `bias`, as unsigned bytes in element order (`bias` is read
    /// as an unsigned byte: −128 stands for 128); `shared` has room for a vector per group. The float part is
    /// `ByteDotProducts.legacy`'s.
    @inline(__always)
    static func legacy(_ m: Matrix, _ rows: Range<Int>, _ a: Activations, _ starts: UnsafeMutablePointer<__m256i>,
                       _ y: UnsafeMutablePointer<Float>, blockBytes: Int, bias: Int8, minimum: Bool,
                       _ unpack: (UnsafeRawPointer) -> __m256i) {
        // Each lane's start, −bias · Σ of its four activations: the same for every row.
        let b = _mm256_set1_epi8(bias)
        for g in 0..<m.groups {
            starts[g] = _mm256_sub_epi32(_mm256_setzero_si256(), dot(_mm256_setzero_si256(), b, a.group(g)))
        }
        @inline(__always) func accumulate(_ w: UnsafeRawPointer, _ g: Int, _ sums: inout SIMD8<Float>, _ minimums: inout Float) {
            let block = w + blockBytes &* g
            let products = _mm256_cvtepi32_ps(dot(starts[g], unpack(block), a.group(g)))
            sums += products * (half(block, 0) * a.steps[g])
            if minimum { minimums += half(block, 2) * a.sums[g] }
        }
        for r in rows {
            let w = m.blocks + r &* m.rowBytes
            var sums = (SIMD8<Float>(), SIMD8<Float>()), minimums: (Float, Float) = (0, 0)
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

    /// `vpdpbusd` on 256 bits: s + Σ of each four u·x (u unsigned, x signed bytes). Clang's plain intrinsic for it is
    /// a macro, which Swift cannot call; the masked one with every lane selected compiles to the same instruction.
    @inline(__always) static func dot(_ s: __m256i, _ u: __m256i, _ x: __m256i) -> __m256i { _mm256_mask_dpbusd_epi32(s, 0xFF, u, x) }

    /// The 32 nibbles of 16 bytes at `offset` in the legacy order (element j in byte j's low nibble, 16 + j in its
    /// high one).
    @inline(__always) static func nibbles(_ block: UnsafeRawPointer, _ offset: Int) -> __m256i {
        let packed = block.loadUnaligned(fromByteOffset: offset, as: __m128i.self)
        return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), _mm256_set1_epi8(0x0F))
    }

    /// + 16 in byte e where bit e of the block's 32-bit field at `offset` is set (the fifth bit of element e).
    @inline(__always) static func withFifthBits(_ q: __m256i, _ block: UnsafeRawPointer, _ offset: Int) -> __m256i {
        _mm256_mask_add_epi8(q, UInt32(littleEndian: block.loadUnaligned(fromByteOffset: offset, as: UInt32.self)), q, _mm256_set1_epi8(16))
    }
}
#endif
