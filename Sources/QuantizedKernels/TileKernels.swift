// This file is compiled twice, like QuantizedRows.swift: as QuantizedKernels for the architecture's baseline and,
// through a symbolic link, as QuantizedKernelsAVX2 with AVX2, FMA and F16C (Package.swift). The AVX2 compilation
// multiplies with `TileKernels.vectorMultiply` (TileProductsAVX2.swift) instead of the loop below.
// Every step is written once, self-contained: debug builds compile each file on its own.

/// The prompt pass's int8 tile kernels (arithmetic `int8-v1`) without AVX-512: the repacking of weight rows into
/// tiles, the rounding of activations to 8 bits and the tile products of QuantizedKernelsAVX512
/// (`TileRepacking`, `TokenTileRounding`, `TileProducts`), in the same layouts and with the same float operations
/// in the same order, so that every CPU computes the bits the `vpdpbusd` kernels compute.
///
/// Why the bits agree: the integer dot products are exact whatever instructions add them up; each float step is
/// the same IEEE operation on the same operands (a product rounded to float, then a fused multiply-add per
/// sub-block, column order, starting from 0 or from what Y holds); halves are converted with round to nearest
/// even (F16C's `vcvtps2ph` and Swift's `Float16` agree); activations are rounded half to even, as
/// `vcvtps2dq` under the default MXCSR rounds them.
public enum TileKernels {
    /// Weight rows per tile.
    public static let rows = 16
    /// Tokens per token tile.
    public static let tokens = 8

    /// The GGML type numbers the tiles hold (`TileRepacking.types`).
    public static let types: Set<UInt32> = [2, 3, 6, 7, 8, 20, 23, 10, 11, 12, 13, 14]

    /// Which Σx̂ a type's offsets multiply.
    public enum Sums: Sendable {
        case none, exact, rounded
    }

    /// 8-bit activations in `TokenTiles`' layout (QuantizedKernelsAVX512): per token tile, for each run of four
    /// columns, the eight tokens' four bytes x̂ + 128 as one word each; per token and sub-block the steps (per 32
    /// and per 16 columns), step · Σq per 32 and per 16 columns, and the f16-rounded sum per 32 columns.
    public struct Activations: @unchecked Sendable {
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
        public var tileWords: Int { columns / 4 * TileKernels.tokens }
        /// Floats of each 16-column array per token tile.
        public var tileFloats: Int { columns / 16 * TileKernels.tokens }
    }

    /// Columns per sub-block of `type`.
    public static func subBlock(_ type: UInt32) -> Int { type == 10 || type == 11 || type == 14 ? 16 : 32 }

    /// Which Σx̂ the offsets of `type` multiply (`TileRepacking.sums`).
    public static func sums(_ type: UInt32) -> Sums {
        switch type {
        case 3, 7: return .rounded
        case 12, 13, 10: return .exact
        default: return .none
        }
    }

    /// Bytes one sub-block of a tile takes: its weights, then 16 corrections, 16 scales, 16 offsets.
    @inline(__always) public static func subBlockBytes(_ size: Int) -> Int { 16 * size + 3 * 64 }

    /// Bytes of a tile of `columns` columns.
    public static func tileBytes(_ type: UInt32, columns: Int) -> Int { columns / subBlock(type) * subBlockBytes(subBlock(type)) }

    // MARK: Products

    /// Y[t · stride + r] for the `validTokens` first tokens of token tile `tile`, rows 0…15 from the tile at
    /// `repacked` (those of `masks.0`), rows 16…31 from the one after it (those of `masks.1`), over `subBlocks`,
    /// added to what Y holds when `accumulate`: `TileProducts.multiply`'s contract and bits.
    @inline(never)
    public static func multiply(repacked: UnsafeRawPointer, tileBytes: Int, subBlock size: Int, sums: Sums, activations a: Activations,
                                tile: Int, validTokens: Int, subBlocks: Range<Int>, accumulate: Bool,
                                into y: UnsafeMutablePointer<Float>, stride: Int, masks: (UInt16, UInt16)) {
        #if QUANTIZED_KERNELS_AVX2
        vectorMultiply(repacked: repacked, tileBytes: tileBytes, subBlock: size, sums: sums, activations: a, tile: tile, validTokens: validTokens,
                       subBlocks: subBlocks, accumulate: accumulate, into: y, stride: stride, masks: masks)
        #else
        precondition(size == 16 || size == 32, "sub-blocks are 16 or 32 columns")
        let quads = size / 4, blockBytes = subBlockBytes(size)
        let steps = size == 32 ? a.steps32 : a.steps16
        let offsetSums = size == 16 ? a.sums16 : sums == .rounded ? a.roundedSums32 : a.sums32
        let offsets = sums != .none
        for t in 0..<validTokens {
            for half in 0..<2 {
                let mask = half == 0 ? masks.0 : masks.1
                let weights = repacked + half &* tileBytes
                for r in 0..<rows where mask & (1 << r) != 0 {
                    let out = y + (t &* stride &+ 16 &* half &+ r)
                    var f: Float = accumulate ? out.pointee : 0
                    for s in subBlocks {
                        let block = weights + (s &* blockBytes &+ 4 &* r)
                        let words = a.bytes + (tile &* a.tileWords &+ s &* quads &* tokens &+ t)
                        // The correction −128 · Σw cancels the +128 the activation bytes carry: Σ w·x̂ exactly.
                        var sum = block.load(fromByteOffset: 64 &* quads, as: Int32.self)
                        for j in 0..<quads {
                            let x = words[tokens &* j], w = block.load(fromByteOffset: 64 &* j, as: UInt32.self)
                            for c in 0..<4 {
                                let shift = UInt32(8 &* c)
                                sum &+= Int32(UInt8(truncatingIfNeeded: x >> shift)) &* Int32(Int8(truncatingIfNeeded: w >> shift))
                            }
                        }
                        let index = tile &* a.tileFloats &+ s &* tokens &+ t
                        let scale = block.load(fromByteOffset: 64 &* (quads &+ 1), as: Float.self)
                        f = f.addingProduct(Float(sum), scale * steps[index])
                        if offsets { f = f.addingProduct(block.load(fromByteOffset: 64 &* (quads &+ 2), as: Float.self), offsetSums[index]) }
                    }
                    out.pointee = f
                }
            }
        }
        #endif
    }

    // MARK: Rounding of activations

    /// Fills token `token`'s lane of `tiles` from `x` (columns): `TokenTileRounding.round`'s values. Per group of
    /// 32: q = round-half-even(x · (127 / max |x|)), the step an f16 of max |x| / 127, the rounded sum an f16 of
    /// the unrounded step · Σq; a group that is not finite gets q = 0 and NaN steps and sums.
    @inline(never)
    public static func round(_ x: UnsafePointer<Float>, token: Int, into tiles: Activations) {
        let (tile, lane) = token.quotientAndRemainder(dividingBy: tokens)
        let words = UnsafeMutablePointer(mutating: tiles.bytes) + (tile &* tiles.tileWords &+ lane)
        let f = tile &* tiles.tileFloats &+ lane
        let steps32 = UnsafeMutablePointer(mutating: tiles.steps32) + f, steps16 = UnsafeMutablePointer(mutating: tiles.steps16) + f
        let sums32 = UnsafeMutablePointer(mutating: tiles.sums32) + f, sums16 = UnsafeMutablePointer(mutating: tiles.sums16) + f
        let roundedSums32 = UnsafeMutablePointer(mutating: tiles.roundedSums32) + f
        for g in 0..<(tiles.columns / 32) {
            let group = x + 32 &* g
            // The largest |x| as bits: one integer maximum gives it and whether the group is finite (infinities
            // and NaNs have every exponent bit set, above any finite magnitude).
            var largestBits: UInt32 = 0
            for i in 0..<32 { largestBits = max(largestBits, group[i].bitPattern & 0x7FFF_FFFF) }
            var low: Int32 = 0, high: Int32 = 0
            var step: Float = .nan, rounded: Float = .nan
            if largestBits < 0x7F80_0000 {
                let largest = Float(bitPattern: largestBits)
                let inverse: Float = largest == 0 ? 0 : 127 / largest
                for k in 0..<8 {
                    var word: UInt32 = 0
                    for c in 0..<4 {
                        let q = Int32((group[4 &* k &+ c] * inverse).rounded(.toNearestOrEven))
                        if k < 4 { low &+= q } else { high &+= q }
                        word |= UInt32(UInt8(truncatingIfNeeded: q) ^ 0x80) << UInt32(8 &* c)
                    }
                    words[(8 &* g &+ k) &* tokens] = word
                }
                let unrounded = largest / 127
                step = Float(Float16(unrounded))
                rounded = Float(Float16(unrounded * Float(low &+ high)))
            } else {
                for k in 0..<8 { words[(8 &* g &+ k) &* tokens] = 0x8080_8080 }
            }
            steps32[g &* tokens] = step
            sums32[g &* tokens] = step * Float(low &+ high)
            roundedSums32[g &* tokens] = rounded
            steps16[2 &* g &* tokens] = step
            steps16[(2 &* g &+ 1) &* tokens] = step
            sums16[2 &* g &* tokens] = step * Float(low)
            sums16[(2 &* g &+ 1) &* tokens] = step * Float(high)
        }
    }

    // MARK: Repacking of weights

    /// Repacks `count` (≤ 16) rows, the first at `rows`, each `rowBytes` long, into `tile` (64-byte aligned):
    /// `TileRepacking.repack`'s bytes. Every type as w = scale · q + offset per sub-block, q a signed byte; rows
    /// past `count` zero in every field.
    @inline(never)
    public static func repack(type: UInt32, rows: UnsafeRawPointer, rowBytes: Int, count: Int, columns: Int,
                              into tile: UnsafeMutableRawPointer) {
        precondition(count > 0 && count <= TileKernels.rows)
        if count < TileKernels.rows { tile.initializeMemory(as: UInt8.self, repeating: 0, count: tileBytes(type, columns: columns)) }
        let size = subBlock(type), groups = columns / 32
        withUnsafeTemporaryAllocation(of: Int8.self, capacity: 32) { buffer in
            let q = buffer.baseAddress!
            for r in 0..<count {
                let row = rows + r &* rowBytes
                /// Group g's 32 values of q (in `q`), with their scales and offsets (two when sub-blocks are 16 wide).
                func write(_ g: Int, scales: (Float, Float), offsets: (Float, Float)) {
                    if size == 32 {
                        store(g, 0, 32, scales.0, offsets.0)
                    } else {
                        store(2 &* g, 0, 16, scales.0, offsets.0)
                        store(2 &* g &+ 1, 16, 16, scales.1, offsets.1)
                    }
                }
                /// Sub-block s from q[first..<first + width]: its bytes four columns by four in lane r, then
                /// the correction −128 · Σq, the scale and the offset.
                func store(_ s: Int, _ first: Int, _ width: Int, _ scale: Float, _ offset: Float) {
                    let base = tile + (s &* subBlockBytes(size) &+ 4 &* r)
                    var sum: Int32 = 0
                    for i in 0..<width {
                        sum &+= Int32(q[first &+ i])
                        base.storeBytes(of: q[first &+ i], toByteOffset: 64 &* (i / 4) &+ i % 4, as: Int8.self)
                    }
                    base.storeBytes(of: -128 &* sum, toByteOffset: 64 &* (width / 4), as: Int32.self)
                    base.storeBytes(of: scale, toByteOffset: 64 &* (width / 4 &+ 1), as: Float.self)
                    base.storeBytes(of: offset, toByteOffset: 64 &* (width / 4 &+ 2), as: Float.self)
                }
                switch type {
                case 2, 3, 6, 7, 8, 20:
                    let blockBytes = type == 8 ? 34 : type == 7 ? 24 : type == 6 ? 22 : type == 3 ? 20 : 18
                    for g in 0..<groups {
                        let block = row + g &* blockBytes
                        let d = half(block, 0)
                        var m: Float = 0
                        switch type {
                        case 2: nibbles(block + 2, q) { Int8($0) - 8 }
                        case 3: m = half(block, 2); nibbles(block + 4, q) { Int8($0) }
                        case 6:
                            nibbles(block + 6, q) { Int8($0) }
                            let bits = word(block, 2)
                            for e in 0..<32 { q[e] = (q[e] | (bits >> UInt32(e) & 1 == 1 ? 16 : 0)) - 16 }
                        case 7:
                            m = half(block, 2)
                            nibbles(block + 8, q) { Int8($0) }
                            let bits = word(block, 4)
                            for e in 0..<32 { q[e] |= bits >> UInt32(e) & 1 == 1 ? 16 : 0 }
                        case 8: for e in 0..<32 { q[e] = block.load(fromByteOffset: 2 &+ e, as: Int8.self) }
                        default: nibbles(block + 2, q) { codebook[Int($0)] }
                        }
                        write(g, scales: (d, d), offsets: (m, m))
                    }
                case 23:
                    // Super-blocks of 256: d, 2 + 4 bytes of 6-bit scales less 32, then 16 bytes of nibbles a group.
                    for s in 0..<(groups / 8) {
                        let block = row + 136 &* s
                        let d = half(block, 0)
                        let high = UInt16(littleEndian: block.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
                        for j in 0..<8 {
                            let low = (block.load(fromByteOffset: 4 &+ j / 2, as: UInt8.self) >> UInt8(4 * (j % 2))) & 0x0F
                            let scale = d * Float(Int(low | UInt8((high >> UInt16(2 * j)) & 3) << 4) - 32)
                            nibbles(block + (8 &+ 16 &* j), q) { codebook[Int($0)] }
                            write(8 &* s &+ j, scales: (scale, scale), offsets: (0, 0))
                        }
                    }
                case 12, 13:
                    // Q4_K (144 bytes), Q5_K (176): d, dmin, 12 bytes of 6-bit scales and minimums, Q5_K's 32 bytes
                    // of fifth bits, then the nibbles, group j in the low (j even) or high nibbles of 32 bytes.
                    let highBits = type == 13
                    let blockSize = highBits ? 176 : 144, qs = highBits ? 48 : 16
                    for s in 0..<(groups / 8) {
                        let block = row + blockSize &* s
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
                            for l in 0..<32 {
                                var v = (block.load(fromByteOffset: qs &+ 32 &* (j / 2) &+ l, as: UInt8.self) >> UInt8(4 * (j % 2))) & 0x0F
                                if highBits, (block.load(fromByteOffset: 16 &+ l, as: UInt8.self) >> UInt8(j)) & 1 == 1 { v |= 16 }
                                q[l] = Int8(v)
                            }
                            let scale = Float(sc) * d, offset = -(dmin * Float(m))
                            write(8 &* s &+ j, scales: (scale, scale), offsets: (offset, offset))
                        }
                    }
                case 14:
                    // Q6_K (210 bytes): 128 bytes of low nibbles, 64 of high bit pairs, 16 signed scales, d; less 32.
                    for s in 0..<(groups / 8) {
                        let block = row + 210 &* s
                        let d = half(block, 208)
                        for j in 0..<8 {
                            let h = j / 4, k = j % 4
                            for l in 0..<32 {
                                let low = (block.load(fromByteOffset: 64 &* h &+ 32 &* (k % 2) &+ l, as: UInt8.self) >> (k < 2 ? 0 : 4)) & 0x0F
                                let high = (block.load(fromByteOffset: 128 &+ 32 &* h &+ l, as: UInt8.self) >> UInt8(2 * k)) & 3
                                q[l] = Int8(low | high << 4) - 32
                            }
                            let s0 = d * Float(block.load(fromByteOffset: 192 &+ 2 &* j, as: Int8.self))
                            let s1 = d * Float(block.load(fromByteOffset: 193 &+ 2 &* j, as: Int8.self))
                            write(8 &* s &+ j, scales: (s0, s1), offsets: (0, 0))
                        }
                    }
                case 11:
                    // Q3_K (110 bytes): 32 bytes of high bits, 64 of bit pairs, 12 bytes of 6-bit scales less 32, d;
                    // values (pair | 4 · high) less 4.
                    for s in 0..<(groups / 8) {
                        let block = row + 110 &* s
                        let d = half(block, 108)
                        let packed = block + 96
                        func scale(_ k: Int) -> Float {
                            let low = k < 8 ? packed.load(fromByteOffset: k, as: UInt8.self) & 0x0F : packed.load(fromByteOffset: k - 8, as: UInt8.self) >> 4
                            let high = (packed.load(fromByteOffset: 8 + k % 4, as: UInt8.self) >> UInt8(2 * (k / 4))) & 3
                            return d * Float(Int16(low | high << 4) - 32)
                        }
                        for j in 0..<8 {
                            for l in 0..<32 {
                                let pair = (block.load(fromByteOffset: 32 &+ 32 &* (j / 4) &+ l, as: UInt8.self) >> UInt8(2 * (j % 4))) & 3
                                let high: UInt8 = (block.load(fromByteOffset: l, as: UInt8.self) >> UInt8(j)) & 1 == 1 ? 4 : 0
                                q[l] = Int8(pair | high) - 4
                            }
                            write(8 &* s &+ j, scales: (scale(2 * j), scale(2 * j + 1)), offsets: (0, 0))
                        }
                    }
                case 10:
                    // Q2_K (84 bytes): 16 bytes of 4-bit scale and minimum (one per 16), 64 of bit pairs, d, dmin.
                    for s in 0..<(groups / 8) {
                        let block = row + 84 &* s
                        let d = half(block, 80), dmin = half(block, 82)
                        for j in 0..<8 {
                            let b0 = block.load(fromByteOffset: 2 &* j, as: UInt8.self), b1 = block.load(fromByteOffset: 2 &* j &+ 1, as: UInt8.self)
                            for l in 0..<32 {
                                q[l] = Int8((block.load(fromByteOffset: 16 &+ 32 &* (j / 4) &+ l, as: UInt8.self) >> UInt8(2 * (j % 4))) & 3)
                            }
                            write(8 &* s &+ j, scales: (d * Float(b0 & 0x0F), d * Float(b1 & 0x0F)),
                                  offsets: (-(dmin * Float(b0 >> 4)), -(dmin * Float(b1 >> 4))))
                        }
                    }
                default: preconditionFailure("no tile repacking for GGML type \(type)")
                }
            }
        }
    }

    /// IQ4's codebook (ggml-common.h, `kvalues_iq4nl`).
    static let codebook: [Int8] = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]

    @inline(__always) static func half(_ p: UnsafeRawPointer, _ offset: Int) -> Float {
        Float(Float16(bitPattern: UInt16(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt16.self))))
    }

    @inline(__always) static func word(_ p: UnsafeRawPointer, _ offset: Int) -> UInt32 {
        UInt32(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    /// The 32 values of 16 bytes of nibbles in the legacy order (element j in byte j's low nibble, 16 + j in its
    /// high one), each through `value`.
    @inline(__always) static func nibbles(_ p: UnsafeRawPointer, _ q: UnsafeMutablePointer<Int8>, _ value: (UInt8) -> Int8) {
        for j in 0..<16 {
            let byte = p.load(fromByteOffset: j, as: UInt8.self)
            q[j] = value(byte & 0x0F)
            q[16 &+ j] = value(byte >> 4)
        }
    }
}
