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

/// Y (tokens, 32 rows) = X̂ · Wᵀ for two tiles of 16 weight rows repacked by `TileRepacking`, with `vpdpbusd`.
///
/// A tile keeps, for each sub-block (16 or 32 columns), the rows' bytes four columns by four: one 512-bit
/// register holds columns 4j…4j+3 of all 16 rows, lane r for row r. `vpdpbusd` with one token's four bytes
/// broadcast adds four products to every row's lane at once, so no horizontal sum is ever needed. Each
/// broadcast serves both tiles and each register of weights four tokens: half the broadcasts of one tile met by
/// eight tokens (which measured the same within this machine's noise). Each token's integer sum starts from the
/// tile's correction −128 · Σw (the activations carry +128), so it ends as Σ w·q exactly; it is then scaled by
/// (row scale · token step) into the token's float sum, plus row offset · token Σx̂ for the types with one.
/// The sub-blocks are added in column order, the same operations whoever computes the tiles.
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

    /// Y[t · stride + r] for the `validTokens` (≤ 8) first tokens of token tile `tile`: rows 0…15 from the tile
    /// at `repacked` (those of `masks.0`), rows 16…31 from the one after it (those of `masks.1`; none when 0),
    /// over the sub-blocks `subBlocks`, added to what Y holds when `accumulate` (the sums of the sub-blocks
    /// before, stored and read back exactly: the float additions stay those of one pass over all of them).
    @inline(never)
    public static func multiply(repacked: UnsafeRawPointer, tileBytes: Int, subBlock: Int, sums: Sums, activations a: TokenTiles,
                                tile: Int, validTokens: Int, subBlocks: Range<Int>, accumulate: Bool,
                                into y: UnsafeMutablePointer<Float>, stride: Int, masks: (UInt16, UInt16)) {
        let first = subBlocks.lowerBound
        let x = a.bytes + tile * a.tileWords + first * subBlock / 4 * TileProducts.tokens
        let floats = tile * a.tileFloats + first * TileProducts.tokens
        let skip = first * subBlockBytes(subBlock)
        let pair = Pair(first: repacked + skip, second: repacked + tileBytes + skip, masks: masks)
        let columns = subBlocks.count * subBlock
        for half in 0..<2 where 4 * half < validTokens {
            let out = Output(y: y + 4 * half * stride, stride: stride, tokens: min(4, validTokens - 4 * half), accumulate: accumulate)
            if subBlock == 32 {
                switch sums {
                case .none: products(32, offsets: false, pair, columns, x, half, a.steps32 + floats, a.sums32, out)
                case .exact: products(32, offsets: true, pair, columns, x, half, a.steps32 + floats, a.sums32 + floats, out)
                case .rounded: products(32, offsets: true, pair, columns, x, half, a.steps32 + floats, a.roundedSums32 + floats, out)
                }
            } else {
                precondition(subBlock == 16, "sub-blocks are 16 or 32 columns")
                switch sums {
                case .none: products(16, offsets: false, pair, columns, x, half, a.steps16 + floats, a.sums16, out)
                case .exact, .rounded: products(16, offsets: true, pair, columns, x, half, a.steps16 + floats, a.sums16 + floats, out)
                }
            }
        }
    }

    /// Bytes one sub-block of a repacked tile takes: its weights, then 16 corrections, 16 scales, 16 offsets.
    @inlinable @inline(__always) public static func subBlockBytes(_ size: Int) -> Int { 16 * size + 3 * 64 }

    struct Pair {
        let first: UnsafeRawPointer
        let second: UnsafeRawPointer
        let masks: (UInt16, UInt16)
    }

    struct Output {
        let y: UnsafeMutablePointer<Float>
        let stride: Int
        let tokens: Int
        let accumulate: Bool
    }

    /// Four tokens (lanes 4·half… of the token tile) times both tiles.
    @inline(__always)
    static func products(_ size: Int, offsets: Bool, _ pair: Pair, _ columns: Int, _ x: UnsafePointer<UInt32>, _ half: Int,
                         _ steps: UnsafePointer<Float>, _ sums: UnsafePointer<Float>, _ out: Output) {
        let quads = size / 4
        @inline(__always) func start(_ t: Int, _ second: Bool) -> __m512 {
            let mask = second ? pair.masks.1 : pair.masks.0
            guard out.accumulate, t < out.tokens, mask != 0 else { return _mm512_setzero_ps() }
            return _mm512_maskz_loadu_ps(mask, out.y + (t &* out.stride &+ (second ? 16 : 0)))
        }
        // Tokens 0–3 × the first tile, then × the second.
        var f = (start(0, false), start(1, false), start(2, false), start(3, false), start(0, true), start(1, true), start(2, true), start(3, true))
        var a = pair.first, b = pair.second
        let lane = 4 &* half
        var xq = x + lane, step = steps + lane, sum = sums + lane
        for _ in 0..<(columns / size) {
            let ca = a.load(fromByteOffset: 64 &* quads, as: __m512i.self), cb = b.load(fromByteOffset: 64 &* quads, as: __m512i.self)
            var s = (ca, ca, ca, ca, cb, cb, cb, cb)
            // Four columns of both tiles' rows at a time, for the four tokens: eight independent chains of
            // `vpdpbusd`, each waiting on its own previous sum only every eighth instruction.
            @inline(__always) func columns(_ j: Int) {
                let wa = a.load(fromByteOffset: 64 &* j, as: __m512i.self), wb = b.load(fromByteOffset: 64 &* j, as: __m512i.self)
                let x = xq + 8 &* j
                @inline(__always) func word(_ t: Int) -> __m512i { _mm512_set1_epi32(Int32(bitPattern: x[t])) }
                let x0 = word(0), x1 = word(1), x2 = word(2), x3 = word(3)
                s.0 = _mm512_dpbusd_epi32(s.0, x0, wa)
                s.4 = _mm512_dpbusd_epi32(s.4, x0, wb)
                s.1 = _mm512_dpbusd_epi32(s.1, x1, wa)
                s.5 = _mm512_dpbusd_epi32(s.5, x1, wb)
                s.2 = _mm512_dpbusd_epi32(s.2, x2, wa)
                s.6 = _mm512_dpbusd_epi32(s.6, x2, wb)
                s.3 = _mm512_dpbusd_epi32(s.3, x3, wa)
                s.7 = _mm512_dpbusd_epi32(s.7, x3, wb)
            }
            columns(0); columns(1); columns(2); columns(3)
            if size == 32 { columns(4); columns(5); columns(6); columns(7) }
            let scaleA = a.load(fromByteOffset: 64 &* (quads &+ 1), as: __m512.self)
            let scaleB = b.load(fromByteOffset: 64 &* (quads &+ 1), as: __m512.self)
            let offsetA = offsets ? a.load(fromByteOffset: 64 &* (quads &+ 2), as: __m512.self) : scaleA
            let offsetB = offsets ? b.load(fromByteOffset: 64 &* (quads &+ 2), as: __m512.self) : scaleB
            @inline(__always) func scaled(_ t: Int, _ sa: __m512i, _ sb: __m512i, _ fa: inout __m512, _ fb: inout __m512) {
                let st = _mm512_set1_ps(step[t])
                fa = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sa), _mm512_mul_ps(scaleA, st), fa)
                fb = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sb), _mm512_mul_ps(scaleB, st), fb)
                if offsets {
                    let su = _mm512_set1_ps(sum[t])
                    fa = _mm512_fmadd_ps(offsetA, su, fa)
                    fb = _mm512_fmadd_ps(offsetB, su, fb)
                }
            }
            scaled(0, s.0, s.4, &f.0, &f.4); scaled(1, s.1, s.5, &f.1, &f.5)
            scaled(2, s.2, s.6, &f.2, &f.6); scaled(3, s.3, s.7, &f.3, &f.7)
            a += subBlockBytes(size)
            b += subBlockBytes(size)
            xq += 8 &* quads
            step += 8
            if offsets { sum += 8 }
        }
        @inline(__always) func store(_ t: Int, _ va: __m512, _ vb: __m512) {
            guard t < out.tokens else { return }
            let row = out.y + t &* out.stride
            _mm512_mask_storeu_ps(row, pair.masks.0, va)
            if pair.masks.1 != 0 { _mm512_mask_storeu_ps(row + 16, pair.masks.1, vb) }
        }
        store(0, f.0, f.4); store(1, f.1, f.5); store(2, f.2, f.6); store(3, f.3, f.7)
    }
}
#endif
