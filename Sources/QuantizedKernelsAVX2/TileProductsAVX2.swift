// Only the AVX2 compilation has this file (Package.swift defines QUANTIZED_KERNELS_AVX2 for it alone).
#if QUANTIZED_KERNELS_AVX2
import _Builtin_intrinsics.intel

extension TileKernels {
    /// `multiply` with AVX2: the integer sums of `TileProducts` (QuantizedKernelsAVX512) without `vpdpbusd`.
    ///
    /// `vpmaddubsw` would saturate here (255 · 128 · 2 exceeds Int16), so both sides are widened to 16 bits
    /// (`vpmovsxbw`: the activations with their + 128 taken off, the weights as the signed bytes they are) and
    /// multiplied in pairs into 32 bits by `vpmaddwd`, which cannot overflow (|x̂·w| ≤ 127 · 128). A 16-byte run
    /// of a tile holds four rows' four columns, so each sum lane is half a row; a horizontal add and a lane
    /// permutation put eight rows in order. Eight rows meet four tokens at a time (each widened run of weights
    /// serves four tokens; the activations are widened once per call): 1.5 times the rate of one token and sixteen
    /// rows at a time (Q4_1 1536 × 576 × 256 tokens, one thread: 21–24 G multiply-adds per CPU second against 14–16;
    /// the VNNI kernels about 95 in the same runs; sgemm reached about 52 in docs/model.md's measurement). The
    /// sums are Σ w·x̂ exactly, as `vpdpbusd`'s are after the correction; the float part is `TileProducts`'
    /// operation for operation (scale · step rounded, then fused multiply-adds in sub-block order), eight rows a
    /// register instead of sixteen.
    @inline(never)
    static func vectorMultiply(repacked: UnsafeRawPointer, tileBytes: Int, subBlock size: Int, sums: Sums, activations a: Activations,
                               tile: Int, validTokens: Int, subBlocks: Range<Int>, accumulate: Bool,
                               into y: UnsafeMutablePointer<Float>, stride: Int, masks: (UInt16, UInt16)) {
        precondition(size == 16 || size == 32, "sub-blocks are 16 or 32 columns")
        let quads = size / 4, blockBytes = subBlockBytes(size)
        let steps = size == 32 ? a.steps32 : a.steps16
        let offsetSums = size == 16 ? a.sums16 : sums == .rounded ? a.roundedSums32 : a.sums32
        let offsets = sums != .none
        // Lanes of the horizontal adds (rows 0, 1, 4, 5 | 2, 3, 6, 7) back in row order.
        let order = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7)
        // The eight tokens' bytes less 128 widened to 16 bits once: per run of four columns, token t's four
        // values at 8 · t bytes, ready to be broadcast; every row tile and row half reads them.
        let runs = subBlocks.count * quads
        withUnsafeTemporaryAllocation(of: __m256i.self, capacity: 2 * runs) { buffer in
            let widened = UnsafeMutableRawPointer(buffer.baseAddress!)
            let words = a.bytes + (tile &* a.tileWords &+ subBlocks.lowerBound &* quads &* tokens)
            let bias = _mm_set1_epi8(-128)
            for run in 0..<runs {
                let eight = UnsafeRawPointer(words + tokens &* run)
                let low = _mm_xor_si128(eight.loadUnaligned(as: __m128i.self), bias)
                let high = _mm_xor_si128(eight.loadUnaligned(fromByteOffset: 16, as: __m128i.self), bias)
                widened.storeBytes(of: _mm256_cvtepi8_epi16(low), toByteOffset: 64 &* run, as: __m256i.self)
                widened.storeBytes(of: _mm256_cvtepi8_epi16(high), toByteOffset: 64 &* run &+ 32, as: __m256i.self)
            }
            // Eight rows (half a tile) times up to four tokens at a time: each widened run of weights serves the
            // four tokens, and the sums fit the sixteen registers.
            for part in 0..<4 {
                let half = part / 2, rowHalf = part % 2
                let mask = (half == 0 ? masks.0 : masks.1) >> UInt16(8 &* rowHalf) & 0xFF
                guard mask != 0 else { continue }
                let weights = repacked + (half &* tileBytes &+ 32 &* rowHalf)
                for first in Swift.stride(from: 0, to: validTokens, by: 4) {
                    let count = min(4, validTokens &- first)
                    @inline(__always) func start(_ t: Int) -> __m256 {
                        var lanes = SIMD8<Float>()
                        if accumulate && t < count {
                            let out = y + ((first &+ t) &* stride &+ 16 &* half &+ 8 &* rowHalf)
                            for r in 0..<8 where mask & (1 << r) != 0 { lanes[r] = out[r] }
                        }
                        return lanes
                    }
                    var f = (start(0), start(1), start(2), start(3))
                    for (k, s) in subBlocks.enumerated() {
                        let block = weights + s &* blockBytes
                        let zero = _mm256_setzero_si256()
                        var low = (zero, zero, zero, zero), high = (zero, zero, zero, zero)
                        for j in 0..<quads {
                            let w = block + 64 &* j
                            let w0 = _mm256_cvtepi8_epi16(w.load(as: __m128i.self))
                            let w1 = _mm256_cvtepi8_epi16(w.load(fromByteOffset: 16, as: __m128i.self))
                            let x = widened + (64 &* (k &* quads &+ j) &+ 8 &* first)
                            @inline(__always) func token(_ t: Int, _ l: inout __m256i, _ h: inout __m256i) {
                                let v = _mm256_set1_epi64x(x.load(fromByteOffset: 8 &* t, as: Int64.self))
                                l = _mm256_add_epi32(l, _mm256_madd_epi16(w0, v))
                                h = _mm256_add_epi32(h, _mm256_madd_epi16(w1, v))
                            }
                            token(0, &low.0, &high.0)
                            if count > 1 { token(1, &low.1, &high.1) }
                            if count > 2 { token(2, &low.2, &high.2) }
                            if count > 3 { token(3, &low.3, &high.3) }
                        }
                        let index = tile &* a.tileFloats &+ s &* tokens &+ first
                        let scale = block.load(fromByteOffset: 64 &* (quads &+ 1), as: __m256.self)
                        let offset = block.load(fromByteOffset: 64 &* (quads &+ 2), as: __m256.self)
                        @inline(__always) func scaled(_ t: Int, _ l: __m256i, _ h: __m256i, _ acc: inout __m256) {
                            let rows = _mm256_permutevar8x32_epi32(_mm256_hadd_epi32(l, h), order)
                            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(rows), _mm256_mul_ps(scale, _mm256_set1_ps(steps[index &+ t])), acc)
                            if offsets { acc = _mm256_fmadd_ps(offset, _mm256_set1_ps(offsetSums[index &+ t]), acc) }
                        }
                        scaled(0, low.0, high.0, &f.0)
                        if count > 1 { scaled(1, low.1, high.1, &f.1) }
                        if count > 2 { scaled(2, low.2, high.2, &f.2) }
                        if count > 3 { scaled(3, low.3, high.3, &f.3) }
                    }
                    @inline(__always) func store(_ t: Int, _ v: __m256) {
                        guard t < count else { return }
                        let lanes = v
                        let out = y + ((first &+ t) &* stride &+ 16 &* half &+ 8 &* rowHalf)
                        for r in 0..<8 where mask & (1 << r) != 0 { out[r] = lanes[r] }
                    }
                    store(0, f.0); store(1, f.1); store(2, f.2); store(3, f.3)
                }
            }
        }
    }
}
#endif
