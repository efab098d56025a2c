// Only the AVX-512 compilation has this code (Package.swift defines QUANTIZED_KERNELS_AVX512 for the target).
#if QUANTIZED_KERNELS_AVX512
import _Builtin_intrinsics.intel

/// h = g / (1 + e⁻ᵍ) · u, sixteen values at a time, for the prompts of inference: the scalar loop of `Kernels`
/// (a libm `expf` per value) took a twentieth of a prompt once the products ran on `vpdpbusd`. Within a few units
/// in the last place of that loop, not equal to it, so training and scoring keep the loop.
public enum VectorSwiGLU {
    @inline(never)
    public static func apply(gate g: UnsafePointer<Float>, up u: UnsafePointer<Float>, count: Int, into h: UnsafeMutablePointer<Float>) {
        let one = _mm512_set1_ps(1)
        var i = 0
        while i < count {
            let mask: UInt16 = count - i >= 16 ? 0xFFFF : UInt16(truncatingIfNeeded: (1 << (count - i)) - 1)
            let gate = _mm512_maskz_loadu_ps(mask, g + i), up = _mm512_maskz_loadu_ps(mask, u + i)
            let silu = _mm512_div_ps(gate, _mm512_add_ps(one, exp(_mm512_sub_ps(_mm512_setzero_ps(), gate))))
            _mm512_mask_storeu_ps(h + i, mask, _mm512_mul_ps(silu, up))
            i += 16
        }
    }

    /// eˣ = 2ⁿ · eʳ with n = round(x / ln 2) and r = x − n · ln 2 (ln 2 in two parts, Cody and Waite), eʳ by its
    /// Taylor polynomial of degree 7 on |r| ≤ ln 2 / 2 (truncation below 3·10⁻⁸ relative). x is clamped to
    /// [−104, 89] first, beyond which eˣ is 0 or infinite in float; 2ⁿ is applied by `vscalefps`.
    @inline(__always) static func exp(_ x: __m512) -> __m512 {
        let clamped = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-104)), _mm512_set1_ps(89))
        let n = _mm512_cvtepi32_ps(_mm512_cvtps_epi32(_mm512_mul_ps(clamped, _mm512_set1_ps(1.442_695_04))))
        var r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693_145_751_953_125), clamped)
        r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428_606_765_330_187e-6), r)
        @inline(__always) func horner(_ p: __m512, _ c: Float) -> __m512 { _mm512_fmadd_ps(p, r, _mm512_set1_ps(c)) }
        let p = horner(horner(horner(horner(horner(horner(horner(_mm512_set1_ps(1.0 / 5040), 1.0 / 720), 1.0 / 120), 1.0 / 24),
                                                   1.0 / 6), 0.5), 1), 1)
        return _mm512_scalef_ps(p, n)
    }
}
#endif
