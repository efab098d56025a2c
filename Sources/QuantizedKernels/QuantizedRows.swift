// This file is compiled twice: as the module QuantizedKernels for the architecture's baseline (SSE2 on x86-64)
// and, through a symbolic link, as QuantizedKernelsAVX2 with AVX2 and FMA enabled (Package.swift). Model picks
// one at run time from the CPU's flags. Both compilations perform the same operations in the same order on
// the same values, so their results agree bit for bit; only the instructions differ (the AVX2 one also converts
// halves with F16C, `QUANTIZED_KERNELS_F16C`, which is exact as the portable conversion is).

/// 8-bit activations in the layout the row kernels read, one entry per 32-value group of the input.
///
/// `values` holds, per group, its 32 values in order as Int16 (64 bytes): the width at which one `pmaddwd`
/// multiplies sixteen weights by sixteen values and adds neighbouring products. `scales` holds each group's step
/// (value = step · q) and `halfSums` the sums of q over each group's first and second 16 values (the types with
/// minimums subtract minimum · Σ x).
public struct QuantizedActivations: @unchecked Sendable {
    public let values: UnsafeRawPointer
    public let scales: UnsafePointer<Float>
    public let halfSums: UnsafePointer<Int32>
    /// Per group, Σ x̂ as llama.cpp's Q8_1 blocks store it (an f16 of the unrounded step · Σ q), for the
    /// legacy types with a minimum, so that they read the values llama.cpp reads.
    public let sums: UnsafePointer<Float>

    public init(values: UnsafeRawPointer, scales: UnsafePointer<Float>, halfSums: UnsafePointer<Int32>, sums: UnsafePointer<Float>) {
        self.values = values
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
/// Every weight type is unpacked into the same form, two vectors of sixteen 16-bit integers per group (its
/// first and its last sixteen elements, in order), so one integer dot product serves them all: two `pmaddwd`
/// (sixteen 16-bit products, neighbours added in 32 bits: |q_w · s| ≤ 4064 for the types whose sub-block scales
/// are folded into the weights, |q_x| ≤ 127, so a pair stays inside Int32 by far) and one 32-bit addition. The
/// group's float scale is applied to the eight partial sums as a vector, so a row costs one horizontal sum, at
/// its end. Each type's function runs over a range of rows, several rows per pass where that shares work.
public enum QuantizedRows {
    /// The GGML type numbers this file reads.
    public static let types: Set<UInt32> = [2, 3, 6, 7, 8, 20, 10, 11, 12, 13, 14, 23]

    /// Rows `rows` of `m` times the activations, into y[rows].
    @inline(never)
    public static func compute(type: UInt32, matrix m: QuantizedMatrix, rows: Range<Int>, activations a: QuantizedActivations,
                               into y: UnsafeMutablePointer<Float>) {
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

    /// Σ over the group's 32 elements of w · x, in eight 32-bit partial sums (lane k: elements 2k, 2k + 1,
    /// 16 + 2k and 17 + 2k): exact, since |sum| ≤ 32 · 4064 · 127 < 2²⁴, so its conversion to float is too.
    @inline(__always)
    static func dot(_ low: Words, _ high: Words, _ a: QuantizedActivations, _ g: Int) -> SIMD8<Float> {
        let x = a.values + 64 * g
        return SIMD8<Float>(pairSums(low, x.load(as: Words.self)) &+ pairSums(high, x.load(fromByteOffset: 32, as: Words.self)))
    }

    /// Lane k = w[2k] · x[2k] + w[2k+1] · x[2k+1] in 32 bits: the widened even products plus the widened odd
    /// ones, the shape LLVM selects `pmaddwd` for.
    @inline(__always) static func pairSums(_ w: Words, _ x: Words) -> SIMD8<Int32> {
        widened(w.evenHalf) &* widened(x.evenHalf) &+ widened(w.oddHalf) &* widened(x.oddHalf)
    }

    @inline(__always) static func widened(_ v: SIMD8<Int16>) -> SIMD8<Int32> { SIMD8<Int32>(truncatingIfNeeded: v) }

    @inline(__always) static func signed(_ v: Lanes) -> Words { unsafeBitCast(v, to: Words.self) }

    /// Sixteen bytes zero-extended to 16 bits (`vpmovzxbw`).
    @inline(__always) static func bytes(_ p: UnsafeRawPointer, _ offset: Int) -> Lanes {
        Lanes(truncatingIfNeeded: p.loadUnaligned(fromByteOffset: offset, as: SIMD16<UInt8>.self))
    }

    /// The 32 nibbles of 16 bytes in the legacy order (element j in byte j's low nibble, element 16 + j in its
    /// high one), as (elements 0–15, elements 16–31).
    @inline(__always) static func nibbles(_ p: UnsafeRawPointer, _ offset: Int) -> (Lanes, Lanes) {
        let v = bytes(p, offset)
        return (v & Lanes(repeating: 0x0F), v &>> 4)
    }

    /// 16 where bit i of `bits` is set, else 0, in lane i: a legacy Q5 half-group's fifth bits. AVX2 has no
    /// per-lane shift of 16-bit lanes, so each lane tests its own bit.
    @inline(__always) static func fifthBits(_ bits: UInt16) -> Lanes {
        let each = Lanes(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
        return Lanes(repeating: 0).replacing(with: 16, where: Lanes(repeating: bits) & each .== each)
    }

    /// Adds a group's term to the chain of its parity: one chain of dependent float additions would cost
    /// their latency per group; two let consecutive groups overlap.
    @inline(__always) static func add(_ acc: inout (SIMD8<Float>, SIMD8<Float>), _ g: Int, _ term: SIMD8<Float>) {
        if g & 1 == 0 { acc.0 += term } else { acc.1 += term }
    }

    @inline(__always) static func add(_ acc: inout (Float, Float), _ g: Int, _ term: Float) {
        if g & 1 == 0 { acc.0 += term } else { acc.1 += term }
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
