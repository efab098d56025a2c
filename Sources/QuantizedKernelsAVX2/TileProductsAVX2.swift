// Only the AVX2 compilation has this file (Package.swift defines QUANTIZED_KERNELS_AVX2 for it alone).
#if QUANTIZED_KERNELS_AVX2
import _Builtin_intrinsics.intel

extension TileKernels {
    /// `multiply` with AVX2: the integer sums of `TileProducts` (QuantizedKernelsAVX512) without `vpdpbusd`.
    ///
    /// `vpmaddubsw` would saturate here (255 · 128 · 2 exceeds Int16), so both sides are widened to 16 bits
    /// (`vpmovsxbw`: the activations with their + 128 taken off, the weights as the signed bytes they are) and
    /// multiplied in pairs into 32 bits by `vpmaddwd`, which cannot overflow (|x̂·w| ≤ 127 · 128). A 16-byte run
    /// of a tile holds four rows' four columns, so each sum lane is half a row; two horizontal adds and a lane
    /// permutation put rows 0…7 and 8…15 in order. The sums are Σ w·x̂ exactly, as `vpdpbusd`'s are after the
    /// correction; the float part is `TileProducts`' operation for operation (scale · step rounded, then fused
    /// multiply-adds in sub-block order), eight rows a register instead of sixteen.
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
        for t in 0..<validTokens {
            for half in 0..<2 {
                let mask = half == 0 ? masks.0 : masks.1
                guard mask != 0 else { continue }
                let weights = repacked + half &* tileBytes
                let out = y + (t &* stride &+ 16 &* half)
                // Rows outside the mask are computed (their tile lanes are zero) but never read or stored.
                var start = SIMD16<Float>()
                if accumulate { for r in 0..<rows where mask & (1 << r) != 0 { start[r] = out[r] } }
                var f0 = unsafeBitCast(start.lowHalf, to: __m256.self), f1 = unsafeBitCast(start.highHalf, to: __m256.self)
                for s in subBlocks {
                    let block = weights + s &* blockBytes
                    let words = a.bytes + (tile &* a.tileWords &+ s &* quads &* tokens &+ t)
                    var sums = (_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256())
                    for j in 0..<quads {
                        // The token's four bytes less 128, as four 16-bit values repeated across the register.
                        let biased = _mm_cvtsi32_si128(Int32(bitPattern: words[tokens &* j] ^ 0x8080_8080))
                        let x = _mm256_broadcastq_epi64(_mm_cvtepi8_epi16(biased))
                        let w = block + 64 &* j
                        @inline(__always) func pairs(_ offset: Int) -> __m256i {
                            _mm256_madd_epi16(_mm256_cvtepi8_epi16(w.load(fromByteOffset: offset, as: __m128i.self)), x)
                        }
                        sums.0 = _mm256_add_epi32(sums.0, pairs(0))
                        sums.1 = _mm256_add_epi32(sums.1, pairs(16))
                        sums.2 = _mm256_add_epi32(sums.2, pairs(32))
                        sums.3 = _mm256_add_epi32(sums.3, pairs(48))
                    }
                    let low = _mm256_permutevar8x32_epi32(_mm256_hadd_epi32(sums.0, sums.1), order)
                    let high = _mm256_permutevar8x32_epi32(_mm256_hadd_epi32(sums.2, sums.3), order)
                    let index = tile &* a.tileFloats &+ s &* tokens &+ t
                    let step = _mm256_set1_ps(steps[index])
                    let scales = block + 64 &* (quads &+ 1)
                    f0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(low), _mm256_mul_ps(scales.load(as: __m256.self), step), f0)
                    f1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(high), _mm256_mul_ps(scales.load(fromByteOffset: 32, as: __m256.self), step), f1)
                    if offsets {
                        let sum = _mm256_set1_ps(offsetSums[index])
                        let offset = block + 64 &* (quads &+ 2)
                        f0 = _mm256_fmadd_ps(offset.load(as: __m256.self), sum, f0)
                        f1 = _mm256_fmadd_ps(offset.load(fromByteOffset: 32, as: __m256.self), sum, f1)
                    }
                }
                let result = SIMD16<Float>(lowHalf: unsafeBitCast(f0, to: SIMD8<Float>.self), highHalf: unsafeBitCast(f1, to: SIMD8<Float>.self))
                for r in 0..<rows where mask & (1 << r) != 0 { out[r] = result[r] }
            }
        }
    }
}
#endif
