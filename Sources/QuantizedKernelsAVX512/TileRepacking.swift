// Only the AVX-512 compilation has this code (Package.swift defines QUANTIZED_KERNELS_AVX512 for the target).
#if QUANTIZED_KERNELS_AVX512
import _Builtin_intrinsics.intel

/// Up to 16 rows of GGML blocks rewritten as one tile of `TileProducts`: every type as w = scale · q + offset per
/// sub-block, q a signed byte.
///
/// Every type fits: the legacy types' q less their centre (Q4_0 −8…7, Q5_0 −16…15), Q8_0 and the IQ4 codebook
/// as they are, Q4_1/Q5_1/Q4_K/Q5_K/Q2_K unsigned with a minimum, which becomes the offset (−dmin · m for the
/// K-quants), Q6_K and Q3_K less their centres. The K-quants' integer sub-scales are folded into the float
/// scale (d · sc). Sub-blocks are 32 columns, or 16 for Q2_K, Q3_K and Q6_K, whose scales change every 16.
/// Rows past the matrix's end are zero in every field, so their lanes come out zero and are not stored.
///
/// A tile is made when a task starts and dropped when it ends: the model is never held twice.
public enum TileRepacking {
    /// The GGML type numbers this file repacks.
    public static let types: Set<UInt32> = [2, 3, 6, 7, 8, 20, 23, 10, 11, 12, 13, 14]

    /// Columns per sub-block of `type`.
    public static func subBlock(_ type: UInt32) -> Int { type == 10 || type == 11 || type == 14 ? 16 : 32 }

    /// Which Σx̂ the offsets of `type` multiply: decode's for each type (`QuantizedRows`), so both read the same
    /// numbers.
    public static func sums(_ type: UInt32) -> TileProducts.Sums {
        switch type {
        case 3, 7: return .rounded
        case 12, 13, 10: return .exact
        default: return .none
        }
    }

    /// Bytes of a tile of `columns` columns.
    public static func tileBytes(_ type: UInt32, columns: Int) -> Int {
        columns / subBlock(type) * TileProducts.subBlockBytes(subBlock(type))
    }

    /// Repacks `count` (≤ 16) rows, the first at `rows`, each `rowBytes` long, into `tile` (64-byte aligned).
    @inline(never)
    public static func repack(type: UInt32, rows: UnsafeRawPointer, rowBytes: Int, count: Int, columns: Int,
                              into tile: UnsafeMutableRawPointer) {
        precondition(count > 0 && count <= TileProducts.rows)
        if count < TileProducts.rows { tile.initializeMemory(as: UInt8.self, repeating: 0, count: tileBytes(type, columns: columns)) }
        let size = subBlock(type)
        let groups = columns / 32
        for r in 0..<count {
            let row = rows + r &* rowBytes
            let writer = Writer(tile: tile, row: r, size: size)
            switch type {
            case 2: legacy(row, groups, 18) { b in (minus(nibbles(b + 2), 8), half(b, 0), 0) }
            case 3: legacy(row, groups, 20) { b in (nibbles(b + 4), half(b, 0), half(b, 2)) }
            case 6: legacy(row, groups, 22) { b in (minus(_mm256_or_si256(fifthBits(b, 2), nibbles(b + 6)), 16), half(b, 0), 0) }
            case 7: legacy(row, groups, 24) { b in (_mm256_or_si256(fifthBits(b, 4), nibbles(b + 8)), half(b, 0), half(b, 2)) }
            case 8: legacy(row, groups, 34) { b in (b.loadUnaligned(fromByteOffset: 2, as: Bytes.self), half(b, 0), 0) }
            case 20: legacy(row, groups, 18) { b in (codebook(b + 2), half(b, 0), 0) }
            case 23: iq4_xs(row, groups, writer)
            case 10: q2_K(row, groups, writer)
            case 11: q3_K(row, groups, writer)
            case 12: q45_K(row, groups, writer, highBits: false)
            case 13: q45_K(row, groups, writer, highBits: true)
            case 14: q6_K(row, groups, writer)
            default: preconditionFailure("no tile repacking for GGML type \(type)")
            }
            @inline(__always) func legacy(_ row: UnsafeRawPointer, _ groups: Int, _ blockBytes: Int,
                                          _ unpack: (UnsafeRawPointer) -> (Bytes, Float, Float)) {
                for g in 0..<groups {
                    let (q, d, m) = unpack(row + g &* blockBytes)
                    writer.group(g, q, scales: (d, d), offsets: (m, m))
                }
            }
        }
    }

    /// 32 signed bytes. Byte arithmetic is written with the intrinsics: Swift's SIMD32<Int8> operators went
    /// element by element here.
    typealias Bytes = __m256i

    /// Where one row's sub-blocks go in the tile: lane `row` of each field.
    struct Writer {
        let tile: UnsafeMutableRawPointer
        let row: Int
        let size: Int

        /// The 32 values of group g (two sub-blocks when they are 16 wide, with their own scales and offsets).
        @inline(__always) func group(_ g: Int, _ q: Bytes, scales: (Float, Float), offsets: (Float, Float)) {
            let words = unsafeBitCast(q, to: SIMD8<UInt32>.self)
            let (low, high) = halfSums(q)
            if size == 32 {
                subBlock(g, words, 0, 8, low &+ high, scales.0, offsets.0)
            } else {
                subBlock(2 &* g, words, 0, 4, low, scales.0, offsets.0)
                subBlock(2 &* g &+ 1, words, 4, 4, high, scales.1, offsets.1)
            }
        }

        /// Σ q over the first and the last 16 bytes: `vpsadbw` sums unsigned bytes eight at a time, so q + 128
        /// is summed and 16 · 128 taken off (widening the bytes in Swift went lane by lane).
        @inline(__always) func halfSums(_ q: Bytes) -> (Int32, Int32) {
            let biased = _mm256_xor_si256(q, _mm256_set1_epi8(-128))
            let sums = _mm256_sad_epu8(biased, _mm256_setzero_si256())
            return (Int32(truncatingIfNeeded: sums[0] &+ sums[1]) &- 2048, Int32(truncatingIfNeeded: sums[2] &+ sums[3]) &- 2048)
        }

        @inline(__always) func subBlock(_ s: Int, _ words: SIMD8<UInt32>, _ first: Int, _ count: Int, _ sum: Int32, _ scale: Float, _ offset: Float) {
            let base = tile + (s &* TileProducts.subBlockBytes(size) &+ 4 &* row)
            for j in 0..<count { base.storeBytes(of: words[first &+ j], toByteOffset: 64 &* j, as: UInt32.self) }
            base.storeBytes(of: -128 &* sum, toByteOffset: 64 &* count, as: Int32.self)
            base.storeBytes(of: scale, toByteOffset: 64 &* (count &+ 1), as: Float.self)
            base.storeBytes(of: offset, toByteOffset: 64 &* (count &+ 2), as: Float.self)
        }
    }

    // MARK: Unpacking

    @inline(__always) static func half(_ p: UnsafeRawPointer, _ offset: Int) -> Float {
        Float(Float16(bitPattern: UInt16(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt16.self))))
    }

    @inline(__always) static func splat(_ value: UInt8) -> Bytes { _mm256_set1_epi8(CChar(bitPattern: value)) }

    @inline(__always) static func minus(_ v: Bytes, _ value: UInt8) -> Bytes { _mm256_sub_epi8(v, splat(value)) }

    /// The legacy order of 16 bytes of nibbles: element j in byte j's low nibble, 16 + j in its high one.
    @inline(__always) static func nibbles(_ p: UnsafeRawPointer) -> Bytes {
        let q = p.loadUnaligned(as: __m128i.self)
        return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), splat(0x0F))
    }

    /// `value` where bit e of `mask` is set, else 0, in byte e.
    @inline(__always) static func bitBytes(_ mask: UInt32, _ value: UInt8) -> Bytes {
        _mm256_and_si256(_mm256_movm_epi8(mask), splat(value))
    }

    /// Q5_0/Q5_1's fifth bits (a 32-bit word at `offset`, bit e for element e) as 16 or 0.
    @inline(__always) static func fifthBits(_ b: UnsafeRawPointer, _ offset: Int) -> Bytes {
        bitBytes(UInt32(littleEndian: b.loadUnaligned(fromByteOffset: offset, as: UInt32.self)), 16)
    }

    /// `value` in byte l where bit `bit` of byte l of the 32 bytes at `p` is set (Q3_K's and Q5_K's high bits).
    @inline(__always) static func bitOfBytes(_ p: UnsafeRawPointer, _ bit: Int, _ value: UInt8) -> Bytes {
        let v = p.loadUnaligned(as: __m256i.self)
        return bitBytes(_mm256_test_epi8_mask(v, _mm256_set1_epi8(CChar(bitPattern: UInt8(1) << UInt8(bit)))), value)
    }

    /// IQ4's codebook (ggml-common.h, `kvalues_iq4nl`), twice: one copy per 128-bit lane for `vpshufb`.
    static let table: __m256i = {
        let values: [Int8] = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]
        return unsafeBitCast(SIMD32<Int8>(lowHalf: SIMD16(values), highHalf: SIMD16(values)), to: __m256i.self)
    }()

    /// The codebook values of 16 bytes of nibbles in the legacy order.
    @inline(__always) static func codebook(_ p: UnsafeRawPointer) -> Bytes {
        _mm256_shuffle_epi8(table, nibbles(p))
    }

    /// 32 bytes at `p`, shifted right by `shift`, masked with `mask`.
    @inline(__always) static func field(_ p: UnsafeRawPointer, _ shift: Int32, _ mask: UInt8) -> Bytes {
        _mm256_and_si256(_mm256_srli_epi16(p.loadUnaligned(as: __m256i.self), shift), splat(mask))
    }

    /// Super-blocks of 256 (ggml-common.h `block_iq4_xs`): d, 2 + 4 bytes of 6-bit scales less 32, then the
    /// codebook nibbles, 16 bytes a group.
    @inline(__always) static func iq4_xs(_ row: UnsafeRawPointer, _ groups: Int, _ writer: Writer) {
        for s in 0..<(groups / 8) {
            let block = row + 136 &* s
            let d = half(block, 0)
            let high = UInt16(littleEndian: block.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
            for j in 0..<8 {
                let low = (block.load(fromByteOffset: 4 &+ j / 2, as: UInt8.self) >> UInt8(4 * (j % 2))) & 0x0F
                let scale = d * Float(Int(low | UInt8((high >> UInt16(2 * j)) & 3) << 4) - 32)
                writer.group(8 &* s &+ j, codebook(block + (8 &+ 16 &* j)), scales: (scale, scale), offsets: (0, 0))
            }
        }
    }

    /// Q4_K (144 bytes) and Q5_K (176): d, dmin, 12 bytes of 6-bit scales and minimums, Q5_K's 32 bytes of fifth
    /// bits, then the nibbles, group j in the low (j even) or high nibbles of 32 bytes.
    @inline(__always) static func q45_K(_ row: UnsafeRawPointer, _ groups: Int, _ writer: Writer, highBits: Bool) {
        let size = highBits ? 176 : 144, qs = highBits ? 48 : 16
        for s in 0..<(groups / 8) {
            let block = row + size &* s
            let d = half(block, 0), dmin = half(block, 2)
            let packed = block + 4
            for j in 0..<8 {
                let sc: UInt8, m: UInt8
                if j < 4 {
                    sc = packed.load(fromByteOffset: j, as: UInt8.self) & 63
                    m = packed.load(fromByteOffset: j + 4, as: UInt8.self) & 63
                } else {
                    let a = packed.load(fromByteOffset: j + 4, as: UInt8.self)
                    sc = (a & 0x0F) | (packed.load(fromByteOffset: j - 4, as: UInt8.self) >> 6) << 4
                    m = (a >> 4) | (packed.load(fromByteOffset: j, as: UInt8.self) >> 6) << 4
                }
                var q = field(block + (qs &+ 32 &* (j / 2)), Int32(4 * (j % 2)), 0x0F)
                if highBits { q = _mm256_or_si256(q, bitOfBytes(block + 16, j, 16)) }
                let scale = Float(sc) * d, offset = -(dmin * Float(m))
                writer.group(8 &* s &+ j, q, scales: (scale, scale), offsets: (offset, offset))
            }
        }
    }

    /// Q6_K (210 bytes): 128 bytes of low nibbles, 64 of high bit pairs, 16 signed scales (one per 16), d;
    /// values less 32.
    @inline(__always) static func q6_K(_ row: UnsafeRawPointer, _ groups: Int, _ writer: Writer) {
        for s in 0..<(groups / 8) {
            let block = row + 210 &* s
            let d = half(block, 208)
            for j in 0..<8 {
                let h = j / 4, k = j % 4
                let low = field(block + (64 &* h &+ 32 &* (k % 2)), k < 2 ? 0 : 4, 0x0F)
                let high = field(block + (128 &+ 32 &* h), Int32(2 * k), 3)
                let s0 = d * Float(block.load(fromByteOffset: 192 &+ 2 &* j, as: Int8.self))
                let s1 = d * Float(block.load(fromByteOffset: 193 &+ 2 &* j, as: Int8.self))
                // The high pairs are at most 3, so shifting 16-bit lanes carries nothing across bytes.
                let q = minus(_mm256_or_si256(low, _mm256_slli_epi16(high, 4)), 32)
                writer.group(8 &* s &+ j, q, scales: (s0, s1), offsets: (0, 0))
            }
        }
    }

    /// Q3_K (110 bytes): 32 bytes of high bits (bit j for group j), 64 of bit pairs, 12 bytes of 6-bit scales less
    /// 32 (one per 16), d; values (pair | 4 · high) less 4.
    @inline(__always) static func q3_K(_ row: UnsafeRawPointer, _ groups: Int, _ writer: Writer) {
        for s in 0..<(groups / 8) {
            let block = row + 110 &* s
            let d = half(block, 108)
            let packed = block + 96
            @inline(__always) func scale(_ k: Int) -> Float {
                let low = k < 8 ? packed.load(fromByteOffset: k, as: UInt8.self) & 0x0F : packed.load(fromByteOffset: k - 8, as: UInt8.self) >> 4
                let high = (packed.load(fromByteOffset: 8 + k % 4, as: UInt8.self) >> UInt8(2 * (k / 4))) & 3
                return d * Float(Int16(low | high << 4) - 32)
            }
            for j in 0..<8 {
                let pair = field(block + (32 &+ 32 &* (j / 4)), Int32(2 * (j % 4)), 3)
                let q = minus(_mm256_or_si256(pair, bitOfBytes(block, j, 4)), 4)
                writer.group(8 &* s &+ j, q, scales: (scale(2 * j), scale(2 * j + 1)), offsets: (0, 0))
            }
        }
    }

    /// Q2_K (84 bytes): 16 bytes of 4-bit scale and minimum (one per 16), 64 of bit pairs, d, dmin.
    @inline(__always) static func q2_K(_ row: UnsafeRawPointer, _ groups: Int, _ writer: Writer) {
        for s in 0..<(groups / 8) {
            let block = row + 84 &* s
            let d = half(block, 80), dmin = half(block, 82)
            for j in 0..<8 {
                let b0 = block.load(fromByteOffset: 2 &* j, as: UInt8.self), b1 = block.load(fromByteOffset: 2 &* j &+ 1, as: UInt8.self)
                let q = field(block + (16 &+ 32 &* (j / 4)), Int32(2 * (j % 4)), 3)
                writer.group(8 &* s &+ j, q, scales: (d * Float(b0 & 0x0F), d * Float(b1 & 0x0F)),
                             offsets: (-(dmin * Float(b0 >> 4)), -(dmin * Float(b1 >> 4))))
            }
        }
    }
}
#endif
