// Only the AVX-512 compilation has this code (Package.swift defines QUANTIZED_KERNELS_AVX512 for the target).
#if QUANTIZED_KERNELS_AVX512
import _Builtin_intrinsics.intel

/// 8-bit activations of `TileProducts.tokens` tokens at a time, in the order the tile kernel reads them.
///
/// Per token tile: `bytes` holds, for each run of four columns, the eight tokens' four bytes (x̂ + 128, so
/// that they are `vpdpbusd`'s unsigned operand) as one 32-bit word each; the float arrays hold one value per
/// token for each sub-block: `steps32`/`steps16` the step of the 32-value group the sub-block lies in (per 32
/// and per 16 columns), `sums32` step · Σq per 32 columns, `roundedSums32` that sum as llama.cpp's Q8_1 blocks
/// keep it (an f16), `sums16` step · Σq per 16 columns. A tile is `tileWords` words and `tileFloats` floats
/// per array after the one before.
public struct TokenTiles: @unchecked Sendable {
    public let bytes: UnsafePointer<UInt32>
    public let steps32: UnsafePointer<Float>
    public let steps16: UnsafePointer<Float>
    public let sums32: UnsafePointer<Float>
    public let roundedSums32: UnsafePointer<Float>
    public let sums16: UnsafePointer<Float>
    public let columns: Int

    public init(bytes: UnsafePointer<UInt32>, steps32: UnsafePointer<Float>, steps16: UnsafePointer<Float>, sums32: UnsafePointer<Float>,
                roundedSums32: UnsafePointer<Float>, sums16: UnsafePointer<Float>, columns: Int) {
        self.bytes = bytes
        self.steps32 = steps32
        self.steps16 = steps16
        self.sums32 = sums32
        self.roundedSums32 = roundedSums32
        self.sums16 = sums16
        self.columns = columns
    }

    /// Words of `bytes` per token tile.
    public var tileWords: Int { columns / 4 * TileProducts.tokens }
    /// Floats of each 16-column array per token tile (the 32-column ones use the first half of that stride).
    public var tileFloats: Int { columns / 16 * TileProducts.tokens }
}

/// Y (tokens, 16 rows) = X̂ · Wᵀ for one tile of 16 weight rows repacked by `TileRepacking`, eight tokens at a
/// time, with `vpdpbusd`.
///
/// The tile keeps, for each sub-block (16 or 32 columns), the rows' bytes four columns by four: one 512-bit
/// register holds columns 4j…4j+3 of all 16 rows, lane r for row r. `vpdpbusd` with one token's four bytes
/// broadcast adds four products to every row's lane at once, so no horizontal sum is ever needed, and each
/// sub-block's registers of weights serve the eight tokens. Each token's integer sum starts from the tile's
/// correction −128 · Σw (the activations carry +128), so it ends as Σ w·q exactly; it is then scaled by
/// (row scale · token step) into the token's float sum, plus row offset · token Σx̂ for the types with one.
/// The sub-blocks are added in column order, the same operations whoever computes the tile.
///
/// Self-contained on purpose: debug builds compile each file on its own, and a helper from another file would be
/// a call in every sub-block.
public enum TileProducts {
    public static let rows = 16
    public static let tokens = 8

    /// Which Σx̂ a type's offsets multiply.
    public enum Sums: Sendable {
        case none, exact, rounded
    }

    /// Y[t · stride + r] for the `validTokens` (≤ 8) first tokens of token tile `tile` and the rows of `rowMask`.
    @inline(never)
    public static func multiply(repacked: UnsafeRawPointer, subBlock: Int, sums: Sums, activations a: TokenTiles, tile: Int,
                                validTokens: Int, into y: UnsafeMutablePointer<Float>, stride: Int, rowMask: UInt16) {
        let x = a.bytes + tile * a.tileWords
        let floats = tile * a.tileFloats
        if subBlock == 32 {
            switch sums {
            case .none: products(32, offsets: false, repacked, a.columns, x, a.steps32 + floats, a.sums32, y, stride, rowMask, validTokens)
            case .exact: products(32, offsets: true, repacked, a.columns, x, a.steps32 + floats, a.sums32 + floats, y, stride, rowMask, validTokens)
            case .rounded:
                products(32, offsets: true, repacked, a.columns, x, a.steps32 + floats, a.roundedSums32 + floats, y, stride, rowMask, validTokens)
            }
        } else {
            precondition(subBlock == 16, "sub-blocks are 16 or 32 columns")
            switch sums {
            case .none: products(16, offsets: false, repacked, a.columns, x, a.steps16 + floats, a.sums16, y, stride, rowMask, validTokens)
            case .exact, .rounded:
                products(16, offsets: true, repacked, a.columns, x, a.steps16 + floats, a.sums16 + floats, y, stride, rowMask, validTokens)
            }
        }
    }

    /// Bytes one sub-block of a repacked tile takes: its weights, then 16 corrections, 16 scales, 16 offsets.
    @inlinable @inline(__always) public static func subBlockBytes(_ size: Int) -> Int { 16 * size + 3 * 64 }

    @inline(__always)
    static func products(_ size: Int, offsets: Bool, _ tile: UnsafeRawPointer, _ columns: Int, _ x: UnsafePointer<UInt32>,
                         _ steps: UnsafePointer<Float>, _ sums: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, _ stride: Int,
                         _ rowMask: UInt16, _ validTokens: Int) {
        let quads = size / 4
        var f = (_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                 _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps())
        var w = tile, xq = x, step = steps, sum = sums
        for _ in 0..<(columns / size) {
            let correction = w.load(fromByteOffset: 64 &* quads, as: __m512i.self)
            var s = (correction, correction, correction, correction, correction, correction, correction, correction)
            // Four columns of every row at a time, for the eight tokens one after the other: eight independent
            // chains of `vpdpbusd`, so each waits for its own previous sum only once every eight instructions
            // (token by token, each sum waited on the one before: the latency, not the throughput, set the pace).
            @inline(__always) func columns(_ j: Int) {
                let weights = w.load(fromByteOffset: 64 &* j, as: __m512i.self)
                let x = xq + 8 &* j
                @inline(__always) func word(_ t: Int) -> __m512i { _mm512_set1_epi32(Int32(bitPattern: x[t])) }
                s.0 = _mm512_dpbusd_epi32(s.0, word(0), weights)
                s.1 = _mm512_dpbusd_epi32(s.1, word(1), weights)
                s.2 = _mm512_dpbusd_epi32(s.2, word(2), weights)
                s.3 = _mm512_dpbusd_epi32(s.3, word(3), weights)
                s.4 = _mm512_dpbusd_epi32(s.4, word(4), weights)
                s.5 = _mm512_dpbusd_epi32(s.5, word(5), weights)
                s.6 = _mm512_dpbusd_epi32(s.6, word(6), weights)
                s.7 = _mm512_dpbusd_epi32(s.7, word(7), weights)
            }
            columns(0); columns(1); columns(2); columns(3)
            if size == 32 { columns(4); columns(5); columns(6); columns(7) }
            let scale = w.load(fromByteOffset: 64 &* (quads &+ 1), as: __m512.self)
            let offset = offsets ? w.load(fromByteOffset: 64 &* (quads &+ 2), as: __m512.self) : scale
            @inline(__always) func scaled(_ t: Int, _ sum32: __m512i, _ acc: inout __m512) {
                acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum32), _mm512_mul_ps(scale, _mm512_set1_ps(step[t])), acc)
                if offsets { acc = _mm512_fmadd_ps(offset, _mm512_set1_ps(sum[t]), acc) }
            }
            scaled(0, s.0, &f.0); scaled(1, s.1, &f.1); scaled(2, s.2, &f.2); scaled(3, s.3, &f.3)
            scaled(4, s.4, &f.4); scaled(5, s.5, &f.5); scaled(6, s.6, &f.6); scaled(7, s.7, &f.7)
            w += subBlockBytes(size)
            xq += 8 &* quads
            step += 8
            if offsets { sum += 8 }
        }
        @inline(__always) func store(_ t: Int, _ v: __m512) {
            if t < validTokens { _mm512_mask_storeu_ps(y + t &* stride, rowMask, v) }
        }
        store(0, f.0); store(1, f.1); store(2, f.2); store(3, f.3)
        store(4, f.4); store(5, f.5); store(6, f.6); store(7, f.7)
    }
}
#endif
