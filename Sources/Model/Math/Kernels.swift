import Foundation

/// Element-wise kernels shared by the forward and backward passes (the matrix products go to `BLAS`).
///
/// Shapes in comments: T = rows (tokens), C = row width.
enum Kernels {
    /// y (T, C) = x · r · w with r = 1/√(mean(x²) + ε) per row; the r of each row goes to `inverseRMS` (T).
    /// The sum of squares is accumulated in Double, as ggml's rms_norm does.
    static func rmsNorm(_ x: UnsafePointer<Float>, weight w: UnsafePointer<Float>, rows: Int, width: Int, epsilon: Float,
                        into y: UnsafeMutablePointer<Float>, inverseRMS: UnsafeMutablePointer<Float>?) {
        for t in 0..<rows {
            let xr = x + t * width, yr = y + t * width
            var sum: Double = 0
            for i in 0..<width { sum += Double(xr[i] * xr[i]) }
            let r = 1 / (Float(sum / Double(width)) + epsilon).squareRoot()
            inverseRMS?[t] = r
            for i in 0..<width { yr[i] = xr[i] * r * w[i] }
        }
    }

    /// Backward of `rmsNorm`: dx (T, C) += ∂L/∂x given dy (T, C), x and r.
    /// With g = dy·w: dx = r·g − x · r³/C · Σ(g·x).
    static func rmsNormBackward(_ dy: UnsafePointer<Float>, x: UnsafePointer<Float>, weight w: UnsafePointer<Float>,
                                inverseRMS r: UnsafePointer<Float>, rows: Int, width: Int, accumulateInto dx: UnsafeMutablePointer<Float>) {
        for t in 0..<rows {
            let dyr = dy + t * width, xr = x + t * width, dxr = dx + t * width
            var dot: Double = 0
            for i in 0..<width { dot += Double(dyr[i] * w[i] * xr[i]) }
            let rt = r[t]
            let k = Float(dot) * rt * rt * rt / Float(width)
            for i in 0..<width { dxr[i] += rt * dyr[i] * w[i] - xr[i] * k }
        }
    }

    /// The cosines and sines of the rotary angles pos · base^(−2i/rotated) for `rows` consecutive positions
    /// from `firstPosition`, computed once per pass and shared by the queries, the keys, every block and the
    /// backward pass (the trigonometry in Double costs more than the rotations themselves).
    struct RotaryAngles {
        let rows: Int
        let pairs: Int
        let cosines: [Float]   // (rows, pairs)
        let sines: [Float]     // (rows, pairs)

        /// `factors` (pairs) divide the frequencies (Llama 3.x's `rope_freqs`), `scale` multiplies them (linear
        /// scaling), as ggml's rope applies its freq_factors and freq_scale.
        init(rows: Int, rotated: Int, base: Float, firstPosition: Int, factors: [Float]? = nil, scale: Float = 1) {
            let pairs = rotated / 2
            var frequencies = [Double](repeating: 0, count: pairs)
            for i in 0..<pairs { frequencies[i] = pow(Double(base), -Double(2 * i) / Double(rotated)) }
            if let factors {
                precondition(factors.count == pairs, "one frequency factor per rotated pair")
                for i in 0..<pairs { frequencies[i] /= Double(factors[i]) }
            }
            if scale != 1 { for i in 0..<pairs { frequencies[i] *= Double(scale) } }
            var cosines = [Float](repeating: 0, count: rows * pairs), sines = [Float](repeating: 0, count: rows * pairs)
            for t in 0..<rows {
                let position = Double(firstPosition + t)
                for i in 0..<pairs {
                    let angle = position * frequencies[i]
                    cosines[t * pairs + i] = Float(cos(angle))
                    sines[t * pairs + i] = Float(sin(angle))
                }
            }
            self.rows = rows
            self.pairs = pairs
            self.cosines = cosines
            self.sines = sines
        }
    }

    /// Rotary embedding as llama.cpp's GGML_ROPE_TYPE_NORM applies it to llama weights: within each head,
    /// the adjacent pair (x[2i], x[2i+1]) for 2i < `rotated` is rotated by pos · base^(−2i/rotated).
    /// (The GGUF converter permutes HF's Q and K rows so that this pairing equals HF's rotate-half.)
    /// `inverse` rotates by the negative angle: the backward pass of the rotation.
    /// x: (T, heads · headDim), row t at position `firstPosition + t`.
    static func rope(_ x: UnsafeMutablePointer<Float>, rows: Int, heads: Int, headDim: Int, rotated: Int,
                     base: Float, firstPosition: Int, inverse: Bool = false) {
        rope(x, heads: heads, headDim: headDim,
             angles: RotaryAngles(rows: rows, rotated: rotated, base: base, firstPosition: firstPosition), inverse: inverse)
    }

    /// `rope` with the angles of its `angles.rows` rows computed beforehand; only `rows` (default: all) are rotated.
    /// `pairing` `.halves` rotates (x[i], x[i + rotated/2]) instead (GGML_ROPE_TYPE_NEOX, HF's rotate_half).
    static func rope(_ x: UnsafeMutablePointer<Float>, heads: Int, headDim: Int, angles: RotaryAngles,
                     rows: Range<Int>? = nil, inverse: Bool = false, pairing: Architecture.RotaryPairing = .adjacent) {
        let pairs = angles.pairs
        // Index of the second member of pair i, and the distance from pair i's first member to pair i + 1's.
        let (partner, step) = pairing == .adjacent ? (1, 2) : (pairs, 1)
        angles.cosines.withUnsafeBufferPointer { cosines in
            angles.sines.withUnsafeBufferPointer { sines in
                for t in rows ?? 0..<angles.rows {
                    let c = cosines.baseAddress! + t * pairs, s = sines.baseAddress! + t * pairs
                    for h in 0..<heads {
                        let v = x + (t * heads + h) * headDim
                        for i in 0..<pairs {
                            let first = step * i
                            let a = v[first], b = v[first + partner]
                            let sine = inverse ? -s[i] : s[i]
                            v[first] = a * c[i] - b * sine
                            v[first + partner] = a * sine + b * c[i]
                        }
                    }
                }
            }
        }
    }

    /// In-place softmax of each row over its first `valid(row)` entries; the rest of its `width` become 0 (the
    /// causal mask). With a `window`, only the last `window` of those entries count and the ones before them
    /// become 0 too (sliding-window attention). Rows are `stride` floats apart (default `width`).
    static func maskedSoftmax(_ s: UnsafeMutablePointer<Float>, rows: Int, width: Int, stride: Int? = nil, window: Int? = nil,
                              valid: (Int) -> Int) {
        for t in 0..<rows {
            let row = s + t * (stride ?? width)
            let n = valid(t)
            let start = window.map { max(0, n - $0) } ?? 0
            let (_, sum) = exponentiateShifted(row + start, count: n - start)
            let inv = Float(1 / sum)
            for j in 0..<start { row[j] = 0 }
            for j in start..<n { row[j] *= inv }
            for j in n..<width { row[j] = 0 }
        }
    }

    /// Replaces x (n) by eˣ⁻ᵐ with m = max x and returns m and Σ eˣ⁻ᵐ: the shared part of a softmax and of a
    /// log-sum-exp. Eight lanes at a time (`exponential8`); the sum gathers blocks of 256 entries in f32 lanes
    /// and adds the blocks in Double, in a fixed order.
    static func exponentiateShifted(_ x: UnsafeMutablePointer<Float>, count n: Int) -> (max: Float, sum: Double) {
        var m = -Float.infinity
        for j in 0..<n where x[j] > m { m = x[j] }
        let raw = UnsafeMutableRawPointer(x)
        let vectors = n / 8
        var sum: Double = 0
        var start = 0
        while start < vectors {
            var block = SIMD8<Float>(repeating: 0)
            for v in start..<min(vectors, start + 32) {
                let e = exponential8(raw.loadUnaligned(fromByteOffset: v * 32, as: SIMD8<Float>.self) - m)
                raw.storeBytes(of: e, toByteOffset: v * 32, as: SIMD8<Float>.self)
                block += e
            }
            sum += Double((block[0] + block[1]) + (block[2] + block[3]) + ((block[4] + block[5]) + (block[6] + block[7])))
            start += 32
        }
        for j in (vectors * 8)..<n {
            let e = expf(x[j] - m)
            x[j] = e
            sum += Double(e)
        }
        return (m, sum)
    }

    /// eˣ for x ≤ 0 in eight lanes, with vector arithmetic only (`rounded()`, `clamped` and conversions on SIMD
    /// types compile to per-lane code): x = k·ln 2 + r with |r| ≤ ln 2 / 2 (ln 2 in two parts, so k·ln 2 is
    /// exact), eʳ by its Taylor series to degree 7 (truncation below 6e-9 relative, under f32 rounding), 2ᵏ
    /// through the exponent bits. Adding 1.5·2²³ rounds x·log₂e to the integer k and leaves k in the low
    /// mantissa bits. Where 2ᵏ would be subnormal (x < −87.3, also x = −∞) the result is 0.
    @inline(__always)
    static func exponential8(_ x: SIMD8<Float>) -> SIMD8<Float> {
        let shifted = x * 1.442_695_040_888_963_4 + 12_582_912
        let k = shifted - 12_582_912
        let r = x - k * 0.693_145_751_953_125 - k * 1.428_606_765_330_187_0e-6
        var p = SIMD8<Float>(repeating: 1.0 / 5040)
        p = p * r + 1.0 / 720
        p = p * r + 1.0 / 120
        p = p * r + 1.0 / 24
        p = p * r + 1.0 / 6
        p = p * r + 0.5
        p = p * r + 1
        p = p * r + 1
        let kBits = unsafeBitCast(shifted, to: SIMD8<Int32>.self) &- 0x4B40_0000   // k
        let scale = unsafeBitCast((kBits &+ 127) &<< 23, to: SIMD8<Float>.self)      // 2ᵏ
        let underflow = (kBits &+ 126) &>> 31                                        // all ones where k < −126
        return unsafeBitCast(unsafeBitCast(p * scale, to: SIMD8<Int32>.self) & ~underflow, to: SIMD8<Float>.self)
    }

    /// h = silu(g) · u = g·σ(g)·u, element-wise over `count` values.
    static func swiglu(gate g: UnsafePointer<Float>, up u: UnsafePointer<Float>, count: Int, into h: UnsafeMutablePointer<Float>) {
        for i in 0..<count { h[i] = g[i] / (1 + expf(-g[i])) * u[i] }
    }

    /// h = gelu(g) · u with gelu(g) = g/2 · (1 + tanh(√(2/π) · (g + 0.044715 g³))), element-wise.
    static func geglu(gate g: UnsafePointer<Float>, up u: UnsafePointer<Float>, count: Int, into h: UnsafeMutablePointer<Float>) {
        for i in 0..<count {
            let x = g[i]
            h[i] = 0.5 * x * (1 + tanhf(0.797_884_56 * (x + 0.044_715 * x * x * x))) * u[i]
        }
    }

    /// Backward of `geglu`: with th = tanh(k·(g + a·g³)), gelu′(g) = (1 + th)/2 + g/2 · (1 − th²) · k·(1 + 3a·g²).
    static func gegluBackward(_ dh: UnsafePointer<Float>, gate g: UnsafePointer<Float>, up u: UnsafePointer<Float>, count: Int,
                              dGate: UnsafeMutablePointer<Float>, dUp: UnsafeMutablePointer<Float>) {
        let (k, a): (Float, Float) = (0.797_884_56, 0.044_715)
        for i in 0..<count {
            let x = g[i]
            let th = tanhf(k * (x + a * x * x * x))
            let gelu = 0.5 * x * (1 + th)
            let derivative = 0.5 * (1 + th) + 0.5 * x * (1 - th * th) * k * (1 + 3 * a * x * x)
            dGate[i] = dh[i] * u[i] * derivative
            dUp[i] = dh[i] * gelu
        }
    }

    /// Backward of `swiglu`: dg = dh·u·σ(g)·(1 + g·(1 − σ(g))), du = dh·g·σ(g).
    static func swigluBackward(_ dh: UnsafePointer<Float>, gate g: UnsafePointer<Float>, up u: UnsafePointer<Float>, count: Int,
                               dGate: UnsafeMutablePointer<Float>, dUp: UnsafeMutablePointer<Float>) {
        for i in 0..<count {
            let s = 1 / (1 + expf(-g[i]))
            dGate[i] = dh[i] * u[i] * s * (1 + g[i] * (1 - s))
            dUp[i] = dh[i] * g[i] * s
        }
    }
}

/// A zero-initialised block of floats owned by one pass (never shared between threads).
final class FloatBuffer {
    let pointer: UnsafeMutablePointer<Float>
    let count: Int

    init(_ count: Int) {
        self.count = count
        pointer = .allocate(capacity: max(1, count))
        pointer.initialize(repeating: 0, count: max(1, count))
    }

    /// Contents unspecified: for buffers their user writes before reading (floats need no initialisation).
    init(uninitialized count: Int) {
        self.count = count
        pointer = .allocate(capacity: max(1, count))
    }

    deinit { pointer.deallocate() }

    func zero() { pointer.update(repeating: 0, count: count) }
}
