// Only the AVX-512 compilation has this code (Package.swift defines QUANTIZED_KERNELS_AVX512 for the target).
#if QUANTIZED_KERNELS_AVX512
import _Builtin_intrinsics.intel

/// A prompt's rows of x rounded to 8 bits per group of 32 into `TokenTiles`' layout, sixteen values to a
/// register: the rounding of decode (`QuantizedMatVec.quantize`, llama.cpp's `quantize_row_q8_0`/`q8_1`), value for
/// value: q = round-half-even(x · (127 / max |x|)) from the product rounded to float, the step kept as an f16 of
/// max |x| / 127, Σx̂ for the Q8_1 users as an f16 of the unrounded step · Σq. A group that is not finite gets
/// q = 0 and NaN steps and sums, so its outputs are NaN as the f32 product's would be.
///
/// The scalar loop this replaces converted halves through library calls (the baseline compilation has no F16C)
/// and cost a fifth of a prompt's products.
public enum TokenTileRounding {
    /// Fills token `token`'s lane of `tiles` (whose buffers the caller owns and made writable) from `x` (columns).
    @inline(never)
    public static func round(_ x: UnsafePointer<Float>, token: Int, into tiles: TokenTiles) {
        let lanes = TileProducts.tokens
        let (tile, lane) = token.quotientAndRemainder(dividingBy: lanes)
        let words = UnsafeMutablePointer(mutating: tiles.bytes) + tile * tiles.tileWords + lane
        let f = tile * tiles.tileFloats + lane
        let steps32 = UnsafeMutablePointer(mutating: tiles.steps32) + f, steps16 = UnsafeMutablePointer(mutating: tiles.steps16) + f
        let sums32 = UnsafeMutablePointer(mutating: tiles.sums32) + f, sums16 = UnsafeMutablePointer(mutating: tiles.sums16) + f
        let roundedSums32 = UnsafeMutablePointer(mutating: tiles.roundedSums32) + f
        let magnitude = _mm512_set1_epi32(0x7FFF_FFFF)
        for g in 0..<(tiles.columns / 32) {
            let v0 = UnsafeRawPointer(x + 32 &* g).loadUnaligned(as: __m512.self)
            let v1 = UnsafeRawPointer(x + (32 &* g &+ 16)).loadUnaligned(as: __m512.self)
            // |x| as bits: for floats of one sign the integer order is the float order, infinities and NaNs
            // (exponent all ones) above every finite value, so one integer maximum gives both max |x| and
            // whether the group is finite.
            let bits = _mm512_max_epi32(_mm512_and_si512(_mm512_castps_si512(v0), magnitude),
                                        _mm512_and_si512(_mm512_castps_si512(v1), magnitude))
            let largestBits = _mm512_reduce_max_epi32(bits)
            let finite = largestBits < 0x7F80_0000
            var low: Int32 = 0, high: Int32 = 0
            var step: Float = .nan, rounded: Float = .nan
            if finite {
                let largest = Float(bitPattern: UInt32(largestBits))
                let inverse = _mm512_set1_ps(largest == 0 ? 0 : 127 / largest)
                let q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, inverse)), q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, inverse))
                low = _mm512_reduce_add_epi32(q0)
                high = _mm512_reduce_add_epi32(q1)
                // + 128 in every byte: the activations are `vpdpbusd`'s unsigned operand.
                let bias = _mm_set1_epi8(-128)
                store(_mm_xor_si128(_mm512_cvtepi32_epi8(q0), bias), words + 8 &* lanes &* g)
                store(_mm_xor_si128(_mm512_cvtepi32_epi8(q1), bias), words + (8 &* g &+ 4) &* lanes)
                let unrounded = largest / 127
                step = Float(Float16(unrounded))
                rounded = Float(Float16(unrounded * Float(low &+ high)))
            } else {
                store(_mm_set1_epi8(-128), words + 8 &* lanes &* g)
                store(_mm_set1_epi8(-128), words + (8 &* g &+ 4) &* lanes)
            }
            steps32[g &* lanes] = step
            sums32[g &* lanes] = step * Float(low &+ high)
            roundedSums32[g &* lanes] = rounded
            steps16[2 &* g &* lanes] = step
            steps16[(2 &* g &+ 1) &* lanes] = step
            sums16[2 &* g &* lanes] = step * Float(low)
            sums16[(2 &* g &+ 1) &* lanes] = step * Float(high)
        }

        /// Sixteen bytes as four words, one every `lanes` words (one run of four columns after another).
        @inline(__always) func store(_ bytes: __m128i, _ to: UnsafeMutablePointer<UInt32>) {
            let w = unsafeBitCast(bytes, to: SIMD4<UInt32>.self)
            to[0] = w[0]
            to[lanes] = w[1]
            to[2 &* lanes] = w[2]
            to[3 &* lanes] = w[3]
        }
    }
}
#endif
