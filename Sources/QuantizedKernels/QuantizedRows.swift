// This file is compiled twice: as the module QuantizedKernels for the architecture's baseline (SSE2 on x86-64)
// and, through a symbolic link, as QuantizedKernelsAVX2 with AVX2 and FMA enabled (Package.swift). Model picks
// one at run time from the CPU's flags. Both compilations perform the same operations in the same order on
// the same values, so their results agree bit for bit; only the instructions differ (the AVX2 one also converts
// halves with F16C, `QUANTIZED_KERNELS_F16C`, which is exact as the portable conversion is). The AVX2 one
// computes the decode rows with `ByteDotProducts` instead (`QUANTIZED_KERNELS_AVX2`): 8-bit products giving the
// same integer sums, then this file's float operations in this file's order, so the bits still agree.
// Every kernel lives in this one file: debug builds compile each file on its own, and a helper defined in
// another file would be called rather than inlined in every group.

/// 8-bit activations in the layout the row kernels read, one entry per 32-value group of the input.
///
/// `values` holds, per group, its 16 even-indexed values then its 16 odd-indexed ones as Int16, then sixteen
/// Int16 ones (96 bytes a group). In that layout a 32-byte run of weights, read as sixteen 16-bit lanes, lines up
/// with the values lane for lane (a lane's low byte is an even element, its high byte the odd one after it). The
/// ones are the multiplier of the widening of 16-bit pair sums to 32 bits: read through a pointer that moves
/// with the group, they are a value LLVM can neither fold away nor hoist out of the loop, so the widening stays
/// the multiply-add it selects `pmaddwd` for (with a constant 1 it became three shifts and an addition; with one
/// copy of the ones, hoisted, it became 32-bit multiplies once a loop body held two groups). `scales` holds each
/// group's step (value = step · q) and `halfSums` the sums of q over each group's first and second 16 values
/// (the types with minimums subtract minimum · Σ x).
public struct QuantizedActivations: @unchecked Sendable {
    public let values: UnsafeRawPointer
    public let scales: UnsafePointer<Float>
    public let halfSums: UnsafePointer<Int32>
    /// Per group, Σ x̂ as llama.cpp's Q8_1 blocks store it (an f16 of the unrounded step · Σ q), for the
    /// legacy types with a minimum, so that they read the values llama.cpp reads.
    public let sums: UnsafePointer<Float>
    /// The same 8-bit values as bytes in element order, 32 a group, for the AVX2 kernels' `vpmaddubsw`.
    public let bytes: UnsafePointer<Int8>

    /// Bytes a group takes in `values`.
    public static let groupBytes = 96

    public init(values: UnsafeRawPointer, scales: UnsafePointer<Float>, halfSums: UnsafePointer<Int32>, sums: UnsafePointer<Float>,
                bytes: UnsafePointer<Int8>) {
        self.values = values
        self.bytes = bytes
        self.scales = scales
        self.halfSums = halfSums
        self.sums = sums
    }
}

/// A matrix in GGML's quantized blocks: row r starts at `blocks + r · rowBytes` and spans `groups` 32-value groups.
public struct QuantizedMatrix: @unchecked Sendable {
    public let blocks: UnsafeRawPointer
    public let rowBytes: Int
    public let groups: Int

    public init(blocks: UnsafeRawPointer, rowBytes: Int, groups: Int) {
        self.blocks = blocks
        self.rowBytes = rowBytes
        self.groups = groups
    }

    @inline(__always) func row(_ r: Int) -> UnsafeRawPointer { blocks + r * rowBytes }
}

/// y[r] = Σ over the row's groups of (weight scale · activation step) · Σ q_w · q_x (+ the minimum terms), for
/// rows stored in GGML's quantized blocks, with integer products.
///
/// Every weight type is unpacked into the same form, two vectors of sixteen 16-bit integers per group (the even
/// and the odd elements), so one integer dot product serves them all: 16-bit multiplies and adds, whose sums of
/// two products stay inside Int16 for every type (|q_w| ≤ 128, |q_x| ≤ 127: 2 · 128 · 127 = 32512), then one
/// widening of the pairs to 32 bits by a multiply-add with ones (`pmaddwd`, `QuantizedActivations`). With AVX2
/// each step is one 256-bit instruction; the group's float scale is applied to the eight partial sums as a
/// vector, so a row costs one horizontal sum, at its end.
///
/// Tried and dropped: reading the activations in order (sixteen bytes widened with `vpmovzxbw` cost one
/// instruction more per sixteen values than the even/odd lanes, read as they lie); multiplying the weights and the
/// activations with `pmaddwd` directly (LLVM sees byte-wide weights, widens them to 32 bits and loses the
/// pattern); `pmaddubsw` from Swift SIMD (formed only from a saturating pattern LLVM simplifies away once the
/// weights' range is known; the AVX2 compilation calls the intrinsic instead, `ByteDotProducts`); two rows per pass sharing the activations' loads (the ones' widening is then hoisted and `pmaddwd`
/// lost again).
public enum QuantizedRows {
    /// The GGML type numbers this file reads.
    public static let types: Set<UInt32> = [2, 3, 6, 7, 8, 20, 10, 11, 12, 13, 14, 23]

    /// Rows `rows` of `m` times the activations, into y[rows].
    @inline(never)
    public static func compute(type: UInt32, matrix m: QuantizedMatrix, rows: Range<Int>, activations a: QuantizedActivations,
                               into y: UnsafeMutablePointer<Float>) {
        #if QUANTIZED_KERNELS_AVX2
        if ByteDotProducts.compute(type: type, matrix: m, rows: rows, activations: a, into: y) { return }
        #endif
        switch type {
        case 2: q4_0(m, rows, a, y)
        case 3: q4_1(m, rows, a, y)
        case 6: q5_0(m, rows, a, y)
        case 7: q5_1(m, rows, a, y)
        case 8: q8_0(m, rows, a, y)
        case 20: iq4_nl(m, rows, a, y)
        case 10: q2_K(m, rows, a, y)
        case 11: q3_K(m, rows, a, y)
        case 12: q4_K(m, rows, a, y)
        case 13: q5_K(m, rows, a, y)
        case 14: q6_K(m, rows, a, y)
        case 23: iq4_xs(m, rows, a, y)
        default: preconditionFailure("no quantized kernel for GGML type \(type)")
        }
    }

    typealias Lanes = SIMD16<UInt16>
    typealias Words = SIMD16<Int16>

    /// Σ over the group's 32 elements of w · x, in eight partial sums (lanes 0–3 from elements 0–15, 4–7 from
    /// 16–31), as floats: exact, since |sum| ≤ 32 · 128 · 127 < 2²⁴.
    @inline(__always)
    static func dot(_ even: Words, _ odd: Words, _ a: QuantizedActivations, _ g: Int) -> SIMD8<Float> {
        let x = a.values + QuantizedActivations.groupBytes &* g
        let products = even &* x.load(as: Words.self) &+ odd &* x.load(fromByteOffset: 32, as: Words.self)
        return SIMD8<Float>(pairSums(products, x.load(fromByteOffset: 64, as: Words.self)))
    }

    /// Eight lanes of `s0` then eight of `s1`: the scales of a group's two halves of 16 values, for the types
    /// with a scale per 16 (applied in float: as integer multipliers LLVM factors them out of the widening and
    /// loses `pmaddwd`).
    @inline(__always) static func halves(_ s0: Float, _ s1: Float) -> SIMD8<Float> {
        SIMD8(lowHalf: SIMD4(repeating: s0), highHalf: SIMD4(repeating: s1))
    }

    /// Calls `body` for the eight groups of a super-block, written out, so that each call sees its group as a
    /// constant (its shifts, its lane of a vector of factors, its chain of sums).
    @inline(__always) static func forEachGroup(_ body: (Int) -> Void) {
        body(0); body(1); body(2); body(3); body(4); body(5); body(6); body(7)
    }

    /// Lane k = w[2k] · x[2k] + w[2k+1] · x[2k+1] in 32 bits: the widened even products plus the widened odd
    /// ones, the shape LLVM selects `pmaddwd` for.
    @inline(__always) static func pairSums(_ w: Words, _ x: Words) -> SIMD8<Int32> {
        widened(w.evenHalf) &* widened(x.evenHalf) &+ widened(w.oddHalf) &* widened(x.oddHalf)
    }

    @inline(__always) static func widened(_ v: SIMD8<Int16>) -> SIMD8<Int32> { SIMD8<Int32>(truncatingIfNeeded: v) }

    @inline(__always) static func signed(_ v: Lanes) -> Words { unsafeBitCast(v, to: Words.self) }

    @inline(__always) static func lanes(_ p: UnsafeRawPointer, _ offset: Int) -> Lanes {
        p.loadUnaligned(fromByteOffset: offset, as: Lanes.self)
    }

    /// The 32 nibbles of 16 bytes in the legacy order (element j in byte j's low nibble, element 16 + j in its
    /// high one), as (even elements, odd elements).
    @inline(__always) static func legacyNibbles(_ p: UnsafeRawPointer, _ offset: Int) -> (Lanes, Lanes) {
        // The 16 bytes in both halves, the low half shifted left by 4: then one shift right by 4 (and a mask)
        // gives the even elements and one by 12 the odd ones.
        let v = p.loadUnaligned(fromByteOffset: offset, as: SIMD8<UInt16>.self)
        let t = Lanes(lowHalf: v, highHalf: v) &* Lanes(16, 16, 16, 16, 16, 16, 16, 16, 1, 1, 1, 1, 1, 1, 1, 1)
        return ((t &>> 4) & Lanes(repeating: 0x0F), t &>> 12)
    }

    /// Bits `shift ..< shift + width` of each of 32 bytes (element l in byte l), as (even, odd).
    @inline(__always) static func field(_ v: Lanes, _ shift: UInt16, _ mask: UInt16) -> (Lanes, Lanes) {
        let m = Lanes(repeating: mask)
        return ((v &>> shift) & m, (v &>> (shift + 8)) & m)
    }

    /// Legacy Q5's fifth bits (bit e of `qh` for element e) as 16 or 0 per element, as (even, odd).
    @inline(__always) static func fifthBits(_ qh: UInt32) -> (Lanes, Lanes) {
        let (even, odd) = fifthBitsAtTop(qh)
        return (even &>> 11, odd &>> 11)
    }

    /// Legacy Q5's fifth bits as bit 15 of each element's lane (the rest zero), as (even, odd): a multiply moves
    /// the wanted bit there, so one shift by 11 gives 16 or 0 (and an arithmetic one −16 or 0).
    @inline(__always) static func fifthBitsAtTop(_ qh: UInt32) -> (Lanes, Lanes) {
        let h = Lanes(lowHalf: SIMD8(repeating: UInt16(truncatingIfNeeded: qh)), highHalf: SIMD8(repeating: UInt16(truncatingIfNeeded: qh >> 16)))
        let evenMask = Lanes(1, 4, 16, 64, 256, 1024, 4096, 16384, 1, 4, 16, 64, 256, 1024, 4096, 16384)
        let evenMul = Lanes(32768, 8192, 2048, 512, 128, 32, 8, 2, 32768, 8192, 2048, 512, 128, 32, 8, 2)
        let oddMask = evenMask &<< 1, oddMul = evenMul &>> 1
        return ((h & evenMask) &* evenMul, (h & oddMask) &* oddMul)
    }

    /// 16 bytes of IQ4 indices in the legacy nibble order, looked up one by one, as (even, odd).
    @inline(__always) static func iq4Lanes(_ p: UnsafeRawPointer, _ table: UnsafePointer<Int16>) -> (SIMD16<Int16>, SIMD16<Int16>) {
        var e = SIMD16<Int16>(), o = SIMD16<Int16>()
        for i in 0..<8 {
            let b0 = Int(p.load(fromByteOffset: 2 * i, as: UInt8.self)), b1 = Int(p.load(fromByteOffset: 2 * i + 1, as: UInt8.self))
            e[i] = table[b0 & 15]; e[8 + i] = table[b0 >> 4]
            o[i] = table[b1 & 15]; o[8 + i] = table[b1 >> 4]
        }
        return (e, o)
    }

    /// Scale and minimum of sub-block j from Q4_K's and Q5_K's 12 packed bytes (ggml-quants.c, `get_scale_min_k4`).
    @inline(__always) static func scaleAndMin(_ p: UnsafeRawPointer, _ j: Int) -> (Float, Float) {
        @inline(__always) func byte(_ i: Int) -> UInt8 { p.load(fromByteOffset: i, as: UInt8.self) }
        if j < 4 { return (Float(byte(j) & 63), Float(byte(j + 4) & 63)) }
        return (Float((byte(j + 4) & 0x0F) | (byte(j - 4) >> 6) << 4), Float((byte(j + 4) >> 4) | (byte(j) >> 6) << 4))
    }
    /// Adds a group's term to the chain of its parity: one chain of dependent float additions would cost
    /// their latency per group; two let consecutive groups overlap.
    @inline(__always) static func add(_ acc: inout (SIMD8<Float>, SIMD8<Float>), _ g: Int, _ term: SIMD8<Float>) {
        if g & 1 == 0 { acc.0 += term } else { acc.1 += term }
    }

    @inline(__always) static func add(_ acc: inout (Float, Float), _ g: Int, _ term: Float) {
        if g & 1 == 0 { acc.0 += term } else { acc.1 += term }
    }

    /// The eight lanes added as a tree (halves, then quarters): three dependent additions where `sum()`'s
    /// lane-by-lane order chains seven, at the end of every row (18 groups long in a 576-wide matrix).
    @inline(__always) static func horizontalSum(_ v: SIMD8<Float>) -> Float {
        let four = v.lowHalf + v.highHalf
        let two = four.lowHalf + four.highHalf
        return two[0] + two[1]
    }

    /// Eight consecutive floats (the steps of a super-block's groups).
    @inline(__always) static func eight(_ p: UnsafePointer<Float>) -> SIMD8<Float> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD8<Float>.self)
    }

    /// Σ q over each of the eight groups from `g`, as floats.
    @inline(__always) static func groupSums(_ a: QuantizedActivations, _ g: Int) -> SIMD8<Float> {
        let pairs = UnsafeRawPointer(a.halfSums + 2 * g).loadUnaligned(as: SIMD16<Int32>.self)
        return SIMD8<Float>(pairs.evenHalf &+ pairs.oddHalf)
    }
}

extension QuantizedRows {
    @inline(__always) static func half(_ p: UnsafeRawPointer, _ offset: Int) -> Float {
        let bits = UInt16(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
        #if QUANTIZED_KERNELS_F16C
        // One `vcvtph2ps`: the bit manipulation below took sixteen instructions, twice a group for the types
        // with a minimum. The conversion is exact, so both compilations read the same value.
        return Float(Float16(bitPattern: bits))
        #else
        // Exact for every half: its bits shifted into f32 position give the value · 2⁻¹¹², subnormals included;
        // infinities and NaNs are selected rather than branched to, a NaN quieted as F16C quiets it. Float(Float16)
        // would be a library call on baseline x86-64.
        let h = UInt32(bits)
        let scaled = Float(bitPattern: (h & 0x7FFF) << 13) * 0x1p112
        let quiet: UInt32 = h & 0x3FF == 0 ? 0 : 0x0040_0000
        let special = Float(bitPattern: 0x7F80_0000 | (h & 0x3FF) << 13 | quiet)
        let magnitude = (h & 0x7C00) == 0x7C00 ? special : scaled
        return Float(bitPattern: magnitude.bitPattern | (h & 0x8000) << 16)
        #endif
    }
}

/// The types of 32-value blocks (ggml-common.h): Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and IQ4_NL, each a half scale,
/// perhaps a half minimum, then the values.
extension QuantizedRows {
    @inline(never) static func q8_0(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        // The unpacking in a helper, not in the closure: written in the closure, it stayed a call per group.
        legacy(m, rows, a, y, blockBytes: 34, minimum: false) { block in signedBytes(block, 2) }
    }

    @inline(never) static func q4_0(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        let eight = Words(repeating: 8)
        legacy(m, rows, a, y, blockBytes: 18, minimum: false) { block in
            let (even, odd) = legacyNibbles(block, 2)
            return (signed(even) &- eight, signed(odd) &- eight)
        }
    }

    @inline(never) static func q4_1(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        legacy(m, rows, a, y, blockBytes: 20, minimum: true) { block in
            let (even, odd) = legacyNibbles(block, 4)
            return (signed(even), signed(odd))
        }
    }

    @inline(never) static func q5_0(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        legacy(m, rows, a, y, blockBytes: 22, minimum: false) { block in centredFifthBitsAndNibbles(block, 2) }
    }

    @inline(never) static func q5_1(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        legacy(m, rows, a, y, blockBytes: 24, minimum: true) { block in
            let (even, odd) = fifthBitsAndNibbles(block, 4)
            return (signed(even), signed(odd))
        }
    }

    @inline(never) static func iq4_nl(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        codebook.withUnsafeBufferPointer { table in
            legacy(m, rows, a, y, blockBytes: 18, minimum: false) { block in iq4Lanes(block + 2, table.baseAddress!) }
        }
    }

    /// 32 signed bytes as (even elements, odd elements): each 16-bit lane's low byte shifted up and back
    /// (sign-extending it), and its high byte shifted down.
    @inline(__always) static func signedBytes(_ p: UnsafeRawPointer, _ offset: Int) -> (Words, Words) {
        let v = signed(lanes(p, offset))
        return ((v &<< 8) &>> 8, v &>> 8)
    }

    /// Q5's five-bit values: `qh` (bit e for element e) at `offset`, the nibbles after it, as (even, odd).
    @inline(__always) static func fifthBitsAndNibbles(_ block: UnsafeRawPointer, _ offset: Int) -> (Lanes, Lanes) {
        let (even, odd) = legacyNibbles(block, offset + 4)
        let (fifthEven, fifthOdd) = fifthBits(UInt32(littleEndian: block.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        return (even | fifthEven, odd | fifthOdd)
    }

    /// Q5_0's values less 16, laid out as `fifthBitsAndNibbles`: (nibble | 16 · bit) − 16 is the nibble plus −16
    /// where the bit is clear, which the arithmetic shift of the inverted bit gives: one addition instead of an or
    /// and a subtraction.
    @inline(__always) static func centredFifthBitsAndNibbles(_ block: UnsafeRawPointer, _ offset: Int) -> (Words, Words) {
        let (even, odd) = legacyNibbles(block, offset + 4)
        let (clearEven, clearOdd) = fifthBitsAtTop(~UInt32(littleEndian: block.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        return (signed(even) &+ (signed(clearEven) &>> 11), signed(odd) &+ (signed(clearOdd) &>> 11))
    }

    /// IQ4's codebook (ggml-common.h, `kvalues_iq4nl`).
    static let codebook: [Int16] = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]

    /// Rows of blocks of `blockBytes`: a half scale d at 0, with `minimum` a half m at 2 (value = d·q + m), and
    /// values `unpack` reads. Groups are taken two at a time, the even one into the first chain of sums and the
    /// odd one into the second, so no branch chooses the chain.
    @inline(__always)
    static func legacy(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>,
                       blockBytes: Int, minimum: Bool, _ unpack: (UnsafeRawPointer) -> (Words, Words)) {
        @inline(__always) func accumulate(_ w: UnsafeRawPointer, _ g: Int, _ products: inout SIMD8<Float>, _ minimums: inout Float) {
            let block = w + blockBytes &* g
            let (even, odd) = unpack(block)
            products += dot(even, odd, a, g) * (half(block, 0) * a.scales[g])
            if minimum { minimums += half(block, 2) * a.sums[g] }
        }
        for r in rows {
            let w = m.row(r)
            var sums = RowSums()
            var g = 0
            while g &+ 1 < m.groups {
                accumulate(w, g, &sums.products.0, &sums.minimums.0)
                accumulate(w, g &+ 1, &sums.products.1, &sums.minimums.1)
                g &+= 2
            }
            if g < m.groups { accumulate(w, g, &sums.products.0, &sums.minimums.0) }
            y[r] = sums.total(minimum)
        }
    }

    /// A row's running sums: the scaled products and the minimum terms, each in two chains (`add`).
    struct RowSums {
        var products = (SIMD8<Float>(), SIMD8<Float>())
        var minimums: (Float, Float) = (0, 0)

        @inline(__always) func total(_ minimum: Bool) -> Float {
            let sum = horizontalSum(products.0 + products.1)
            return minimum ? sum + (minimums.0 + minimums.1) : sum
        }
    }
}

/// The types of 256-value super-blocks (ggml-common.h): Q2_K…Q6_K and IQ4_XS, eight 32-value groups each with
/// its own sub-block scales. A super-block's scales are unpacked once, into a vector of the eight groups'
/// float factors (super-block scale · sub-block scale · activation step), so a group costs its integer dot
/// product, one conversion and one multiply-add.
extension QuantizedRows {
    @inline(never) static func q4_K(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        for r in rows { y[r] = q45_K(m.row(r), m.groups, a, highBits: false) }
    }

    @inline(never) static func q5_K(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        for r in rows { y[r] = q45_K(m.row(r), m.groups, a, highBits: true) }
    }

    @inline(never) static func q6_K(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        for r in rows { y[r] = q6_K(m.row(r), m.groups, a) }
    }

    @inline(never) static func q3_K(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        for r in rows { y[r] = q3_K(m.row(r), m.groups, a) }
    }

    @inline(never) static func q2_K(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        for r in rows { y[r] = q2_K(m.row(r), m.groups, a) }
    }

    @inline(never) static func iq4_xs(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        codebook.withUnsafeBufferPointer { table in
            for r in rows { y[r] = iq4_xs(m.row(r), m.groups, a, table.baseAddress!) }
        }
    }

    /// Q4_K's and Q5_K's eight 6-bit scales and eight 6-bit minimums from their 12 packed bytes, as bytes
    /// (ggml-quants.c, `get_scale_min_k4`): sub-blocks 0–3 keep the low six bits of bytes 0–3 (scales) and
    /// 4–7 (minimums); sub-blocks 4–7 take the nibbles of bytes 8–11 as low bits and the top two bits of bytes
    /// 0–3 (scales) or 4–7 (minimums) as high bits. Four sub-blocks per 32-bit word, all at once.
    @inline(__always) static func scalesAndMinimums(_ p: UnsafeRawPointer) -> (scales: SIMD8<Float>, minimums: SIMD8<Float>) {
        let w0 = UInt32(littleEndian: p.loadUnaligned(as: UInt32.self))
        let w1 = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        let w2 = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        let six: UInt32 = 0x3F3F_3F3F, nibble: UInt32 = 0x0F0F_0F0F, two: UInt32 = 0x0303_0303
        let scales = SIMD2<UInt32>(w0 & six, (w2 & nibble) | ((w0 >> 6) & two) << 4)
        let minimums = SIMD2<UInt32>(w1 & six, ((w2 >> 4) & nibble) | ((w1 >> 6) & two) << 4)
        @inline(__always) func floats(_ v: SIMD2<UInt32>) -> SIMD8<Float> { SIMD8<Float>(unsafeBitCast(v, to: SIMD8<UInt8>.self)) }
        return (floats(scales), floats(minimums))
    }

    @inline(__always) static func q45_K(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations, highBits: Bool) -> Float {
        var acc = (SIMD8<Float>(), SIMD8<Float>())   // even and odd groups: two chains of additions
        var minimums = SIMD8<Float>()
        let size = highBits ? 176 : 144, qs = highBits ? 48 : 16
        for s in 0..<(groups / 8) {
            let block = w + size * s
            let steps = eight(a.scales + 8 * s)
            let (scales, mins) = scalesAndMinimums(block + 4)
            let factors = scales * half(block, 0) * steps
            minimums += mins * half(block, 2) * steps * groupSums(a, 8 * s)
            @inline(__always) func group(_ j: Int) {
                // Group j in the low (j even) or high nibbles of 32 bytes.
                var (even, odd) = field(lanes(block, qs + 32 * (j / 2)), UInt16(4 * (j % 2)), 0x0F)
                if highBits {
                    let (fifthEven, fifthOdd) = field(lanes(block, 16), UInt16(j), 1)
                    even |= fifthEven &<< 4
                    odd |= fifthOdd &<< 4
                }
                add(&acc, j, dot(signed(even), signed(odd), a, 8 * s + j) * factors[j])
            }
            forEachGroup(group)
        }
        return horizontalSum(acc.0 + acc.1) - horizontalSum(minimums)
    }

    static func q6_K(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations) -> Float {
        var acc = (SIMD8<Float>(), SIMD8<Float>())   // even and odd groups: two chains of additions
        let bias = Words(repeating: 32)
        for s in 0..<(groups / 8) {
            let block = w + 210 * s
            let factors = half(block, 208) * eight(a.scales + 8 * s)
            let scales = block + 192
            @inline(__always) func group(_ j: Int) {
                let h = j / 4, k = j % 4
                let (even, odd) = field(lanes(block, 64 * h + 32 * (k % 2)), k < 2 ? 0 : 4, 0x0F)
                let (highEven, highOdd) = field(lanes(block, 128 + 32 * h), UInt16(2 * k), 3)
                let s0 = Float(scales.load(fromByteOffset: 2 * j, as: Int8.self))
                let s1 = Float(scales.load(fromByteOffset: 2 * j + 1, as: Int8.self))
                add(&acc, j, dot(signed(even | highEven &<< 4) &- bias, signed(odd | highOdd &<< 4) &- bias, a, 8 * s + j)
                    * (halves(s0, s1) * factors[j]))
            }
            forEachGroup(group)
        }
        return horizontalSum(acc.0 + acc.1)
    }

    static func q3_K(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations) -> Float {
        var acc = (SIMD8<Float>(), SIMD8<Float>())   // even and odd groups: two chains of additions
        let four = Words(repeating: 4)
        for s in 0..<(groups / 8) {
            let block = w + 110 * s
            let factors = half(block, 108) * eight(a.scales + 8 * s)
            let packed = block + 96
            @inline(__always) func scale(_ k: Int) -> Float {
                let low = k < 8 ? packed.load(fromByteOffset: k, as: UInt8.self) & 0x0F : packed.load(fromByteOffset: k - 8, as: UInt8.self) >> 4
                let high = (packed.load(fromByteOffset: 8 + k % 4, as: UInt8.self) >> UInt8(2 * (k / 4))) & 3
                return Float(Int16(low | high << 4) - 32)
            }
            let mask = lanes(block, 0)
            @inline(__always) func group(_ j: Int) {
                let (even, odd) = field(lanes(block, 32 + 32 * (j / 4)), UInt16(2 * (j % 4)), 3)
                let (highEven, highOdd) = field(mask, UInt16(j), 1)
                add(&acc, j, dot(signed(even | highEven &<< 2) &- four, signed(odd | highOdd &<< 2) &- four, a, 8 * s + j)
                    * (halves(scale(2 * j), scale(2 * j + 1)) * factors[j]))
            }
            forEachGroup(group)
        }
        return horizontalSum(acc.0 + acc.1)
    }

    static func q2_K(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations) -> Float {
        var acc = (SIMD8<Float>(), SIMD8<Float>())   // even and odd groups: two chains of additions
        var offset: Float = 0
        for s in 0..<(groups / 8) {
            let block = w + 84 * s
            let d = half(block, 80), dmin = half(block, 82)
            @inline(__always) func group(_ j: Int) {
                let g = 8 * s + j
                let (even, odd) = field(lanes(block, 16 + 32 * (j / 4)), UInt16(2 * (j % 4)), 3)
                let b0 = block.load(fromByteOffset: 2 * j, as: UInt8.self), b1 = block.load(fromByteOffset: 2 * j + 1, as: UInt8.self)
                add(&acc, j, dot(signed(even), signed(odd), a, g) * (halves(Float(b0 & 0x0F), Float(b1 & 0x0F)) * (d * a.scales[g])))
                offset -= dmin * a.scales[g] * (Float(b0 >> 4) * Float(a.halfSums[2 * g]) + Float(b1 >> 4) * Float(a.halfSums[2 * g + 1]))
            }
            forEachGroup(group)
        }
        return horizontalSum(acc.0 + acc.1) + offset
    }

    static func iq4_xs(_ w: UnsafeRawPointer, _ groups: Int, _ a: QuantizedActivations, _ table: UnsafePointer<Int16>) -> Float {
        var acc = (SIMD8<Float>(), SIMD8<Float>())   // even and odd groups: two chains of additions
        for s in 0..<(groups / 8) {
            let block = w + 136 * s
            let d = half(block, 0)
            let high = UInt16(littleEndian: block.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
            @inline(__always) func group(_ j: Int) {
                let g = 8 * s + j
                let low = (block.load(fromByteOffset: 4 + j / 2, as: UInt8.self) >> UInt8(4 * (j % 2))) & 0x0F
                let scale = Int(low | UInt8((high >> UInt16(2 * j)) & 3) << 4) - 32
                let (even, odd) = iq4Lanes(block + 8 + 16 * j, table)
                add(&acc, j, dot(even, odd, a, g) * (d * Float(scale) * a.scales[g]))
            }
            forEachGroup(group)
        }
        return horizontalSum(acc.0 + acc.1)
    }
}

/// Whole blocks to f32 for the batched passes, which multiply the result with sgemm: the values `Dequantize`
/// (Model) gives, bit for bit, eight at a time. Every value is an exact integer times its block's factor, with
/// the same one or two roundings in the same order as there (`Float(q) · d + m` stays two roundings: Swift does
/// not fuse them), so the two compilations and the reference agree.
extension QuantizedRows {
    /// The GGML type numbers `dequantize` converts (the legacy types and Q4_K, Q5_K, Q6_K).
    public static let dequantizedTypes: Set<UInt32> = [2, 3, 6, 7, 8, 12, 13, 14]

    /// `count` values of `type` from `blocks` (count / block size whole blocks) into `out`.
    @inline(never)
    public static func dequantize(type: UInt32, blocks: UnsafeRawPointer, count: Int, into out: UnsafeMutablePointer<Float>) {
        switch type {
        case 2:
            blocksOf32(blocks, count, out, blockBytes: 18) { b in
                let d = half(b, 0)
                return nibbleQuarters(b + 2).map { Floats($0 &- 8) * d }
            }
        case 3:
            blocksOf32(blocks, count, out, blockBytes: 20) { b in
                let d = half(b, 0), m = half(b, 2)
                return nibbleQuarters(b + 4).map { Floats($0) * d + m }
            }
        case 6:
            blocksOf32(blocks, count, out, blockBytes: 22) { b in
                let d = half(b, 0)
                return fifthBitQuarters(b + 2).map { Floats($0 &- 16) * d }
            }
        case 7:
            blocksOf32(blocks, count, out, blockBytes: 24) { b in
                let d = half(b, 0), m = half(b, 2)
                return fifthBitQuarters(b + 4).map { Floats($0) * d + m }
            }
        case 8:
            blocksOf32(blocks, count, out, blockBytes: 34) { b in
                let d = half(b, 0), q = b.loadUnaligned(fromByteOffset: 2, as: SIMD32<Int8>.self)
                return Quarters(Ints(truncatingIfNeeded: q.lowHalf.lowHalf), Ints(truncatingIfNeeded: q.lowHalf.highHalf),
                                Ints(truncatingIfNeeded: q.highHalf.lowHalf), Ints(truncatingIfNeeded: q.highHalf.highHalf)).map { Floats($0) * d }
            }
        case 12: dequantize45_K(blocks, count, out, highBits: false)
        case 13: dequantize45_K(blocks, count, out, highBits: true)
        case 14: dequantize6_K(blocks, count, out)
        default: preconditionFailure("no block dequantizer for GGML type \(type)")
        }
    }

    typealias Ints = SIMD8<Int32>
    typealias Floats = SIMD8<Float>

    /// A 32-value group as four runs of eight (elements 0–7, 8–15, 16–23, 24–31).
    struct Quarters<Element> {
        var v: (Element, Element, Element, Element)
        @inline(__always) init(_ a: Element, _ b: Element, _ c: Element, _ d: Element) { v = (a, b, c, d) }
        @inline(__always) func map<T>(_ f: (Element) -> T) -> Quarters<T> { Quarters<T>(f(v.0), f(v.1), f(v.2), f(v.3)) }
    }

    /// Calls `convert` for each 32-value block and stores its values in order.
    @inline(__always)
    static func blocksOf32(_ blocks: UnsafeRawPointer, _ count: Int, _ out: UnsafeMutablePointer<Float>, blockBytes: Int,
                           _ convert: (UnsafeRawPointer) -> Quarters<Floats>) {
        for b in 0..<(count / 32) { store(convert(blocks + b &* blockBytes), out + 32 &* b) }
    }

    @inline(__always) static func store(_ q: Quarters<Floats>, _ out: UnsafeMutablePointer<Float>) {
        let raw = UnsafeMutableRawPointer(out)
        raw.storeBytes(of: q.v.0, as: Floats.self)
        raw.storeBytes(of: q.v.1, toByteOffset: 32, as: Floats.self)
        raw.storeBytes(of: q.v.2, toByteOffset: 64, as: Floats.self)
        raw.storeBytes(of: q.v.3, toByteOffset: 96, as: Floats.self)
    }

    /// The 32 nibbles of 16 bytes in the legacy order (element j in byte j's low nibble, 16 + j in its high one).
    @inline(__always) static func nibbleQuarters(_ p: UnsafeRawPointer) -> Quarters<Ints> {
        let bytes = p.loadUnaligned(as: SIMD16<UInt8>.self)
        let low = bytes & 0x0F, high = bytes &>> 4
        return Quarters(Ints(truncatingIfNeeded: low.lowHalf), Ints(truncatingIfNeeded: low.highHalf),
                        Ints(truncatingIfNeeded: high.lowHalf), Ints(truncatingIfNeeded: high.highHalf))
    }

    /// Legacy Q5's five-bit values: `qh` (bit e for element e) at `p`, the nibbles after it.
    @inline(__always) static func fifthBitQuarters(_ p: UnsafeRawPointer) -> Quarters<Ints> {
        let qh = Ints(repeating: Int32(bitPattern: UInt32(littleEndian: p.loadUnaligned(as: UInt32.self))))
        let bits = Ints(1, 2, 4, 8, 16, 32, 64, 128)
        let zero = Ints(), sixteen = Ints(repeating: 16)
        @inline(__always) func fifth(_ shift: Int32) -> Ints { zero.replacing(with: sixteen, where: qh & (bits &<< shift) .!= zero) }
        let n = nibbleQuarters(p + 4)
        return Quarters(n.v.0 | fifth(0), n.v.1 | fifth(8), n.v.2 | fifth(16), n.v.3 | fifth(24))
    }

    /// Q4_K and Q5_K: group j of a super-block is d · scale_j · q − dmin · min_j, q the low (j even) or high nibble
    /// of 32 bytes [+ 16 · bit j of the 32 `qh` bytes].
    @inline(__always)
    static func dequantize45_K(_ blocks: UnsafeRawPointer, _ count: Int, _ out: UnsafeMutablePointer<Float>, highBits: Bool) {
        let size = highBits ? 176 : 144, qs = highBits ? 48 : 16
        for s in 0..<(count / 256) {
            let block = blocks + size &* s
            let d = half(block, 0), dmin = half(block, 2)
            for j in 0..<8 {
                let (scale, minimum) = scaleAndMin(block + 4, j)
                let d1 = d * scale, m1 = dmin * minimum
                var q = byteQuarters(block + qs + 32 * (j / 2)).map { j % 2 == 0 ? $0 & 0x0F : $0 &>> 4 }
                if highBits { q = Quarters(q, byteQuarters(block + 16)) { $0 | (($1 &>> Int32(j)) & 1) &<< 4 } }
                store(q.map { d1 * Floats($0) - m1 }, out + 256 &* s + 32 * j)
            }
        }
    }

    /// Q6_K: element 128h + 32k + l is d · scale[e / 16] · (q − 32), q's low four bits the low (k < 2) or high
    /// nibble of ql[64h + 32·(k % 2) + l] and its high two bits (qh[32h + l] >> 2k) & 3.
    @inline(__always)
    static func dequantize6_K(_ blocks: UnsafeRawPointer, _ count: Int, _ out: UnsafeMutablePointer<Float>) {
        for s in 0..<(count / 256) {
            let block = blocks + 210 &* s
            let d = half(block, 208)
            for j in 0..<8 {
                let h = j / 4, k = j % 4
                let low = byteQuarters(block + 64 * h + 32 * (k % 2)).map { k < 2 ? $0 & 0x0F : $0 &>> 4 }
                let high = byteQuarters(block + 128 + 32 * h).map { ($0 &>> Int32(2 * k)) & 3 }
                let q = Quarters(low, high) { ($0 | $1 &<< 4) &- 32 }
                let s0 = d * Float(block.load(fromByteOffset: 192 + 2 * j, as: Int8.self))
                let s1 = d * Float(block.load(fromByteOffset: 193 + 2 * j, as: Int8.self))
                store(Quarters(s0 * Floats(q.v.0), s0 * Floats(q.v.1), s1 * Floats(q.v.2), s1 * Floats(q.v.3)), out + 256 &* s + 32 * j)
            }
        }
    }

    /// 32 bytes as four runs of eight 32-bit values.
    @inline(__always) static func byteQuarters(_ p: UnsafeRawPointer) -> Quarters<Ints> {
        let bytes = p.loadUnaligned(as: SIMD32<UInt8>.self)
        return Quarters(Ints(truncatingIfNeeded: bytes.lowHalf.lowHalf), Ints(truncatingIfNeeded: bytes.lowHalf.highHalf),
                        Ints(truncatingIfNeeded: bytes.highHalf.lowHalf), Ints(truncatingIfNeeded: bytes.highHalf.highHalf))
    }
}

extension QuantizedRows.Quarters {
    /// The runs of two groups combined run by run.
    @inline(__always) init<A, B>(_ a: QuantizedRows.Quarters<A>, _ b: QuantizedRows.Quarters<B>, _ f: (A, B) -> Element) {
        self.init(f(a.v.0, b.v.0), f(a.v.1, b.v.1), f(a.v.2, b.v.2), f(a.v.3, b.v.3))
    }
}
