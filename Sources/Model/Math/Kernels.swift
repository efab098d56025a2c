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

        init(rows: Int, rotated: Int, base: Float, firstPosition: Int) {
            let pairs = rotated / 2
            var frequencies = [Double](repeating: 0, count: pairs)
            for i in 0..<pairs { frequencies[i] = pow(Double(base), -Double(2 * i) / Double(rotated)) }
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
    static func rope(_ x: UnsafeMutablePointer<Float>, heads: Int, headDim: Int, angles: RotaryAngles,
                     rows: Range<Int>? = nil, inverse: Bool = false) {
        let pairs = angles.pairs
        angles.cosines.withUnsafeBufferPointer { cosines in
            angles.sines.withUnsafeBufferPointer { sines in
                for t in rows ?? 0..<angles.rows {
                    let c = cosines.baseAddress! + t * pairs, s = sines.baseAddress! + t * pairs
                    for h in 0..<heads {
                        let v = x + (t * heads + h) * headDim
                        for i in 0..<pairs {
                            let a = v[2 * i], b = v[2 * i + 1]
                            let sine = inverse ? -s[i] : s[i]
                            v[2 * i] = a * c[i] - b * sine
                            v[2 * i + 1] = a * sine + b * c[i]
                        }
                    }
                }
            }
        }
    }

    /// In-place softmax of each row over its first `valid(row)` entries; the rest of its `width` become 0 (the
    /// causal mask). Rows are `stride` floats apart (default `width`).
    static func maskedSoftmax(_ s: UnsafeMutablePointer<Float>, rows: Int, width: Int, stride: Int? = nil, valid: (Int) -> Int) {
        for t in 0..<rows {
            let row = s + t * (stride ?? width)
            let n = valid(t)
            var m = -Float.infinity
            for j in 0..<n { m = max(m, row[j]) }
            var sum: Double = 0
            for j in 0..<n {
                let e = expf(row[j] - m)
                row[j] = e
                sum += Double(e)
            }
            let inv = Float(1 / sum)
            for j in 0..<n { row[j] *= inv }
            for j in n..<width { row[j] = 0 }
        }
    }

    /// h = silu(g) · u = g·σ(g)·u, element-wise over `count` values.
    static func swiglu(gate g: UnsafePointer<Float>, up u: UnsafePointer<Float>, count: Int, into h: UnsafeMutablePointer<Float>) {
        for i in 0..<count { h[i] = g[i] / (1 + expf(-g[i])) * u[i] }
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
