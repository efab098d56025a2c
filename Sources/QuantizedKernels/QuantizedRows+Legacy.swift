// Compiled twice, as QuantizedRows.swift is (the symbolic link in QuantizedKernelsAVX2).

/// The types of 32-value blocks (ggml-common.h): Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and IQ4_NL, each a half scale,
/// perhaps a half minimum, then the values.
extension QuantizedRows {
    @inline(never) static func q8_0(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        legacy(m, rows, a, y, blockBytes: 34, minimum: false) { block in
            (Words(truncatingIfNeeded: block.loadUnaligned(fromByteOffset: 2, as: SIMD16<Int8>.self)),
             Words(truncatingIfNeeded: block.loadUnaligned(fromByteOffset: 18, as: SIMD16<Int8>.self)))
        }
    }

    @inline(never) static func q4_0(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        let eight = Words(repeating: 8)
        legacy(m, rows, a, y, blockBytes: 18, minimum: false) { block in
            let (low, high) = nibbles(block, 2)
            return (signed(low) &- eight, signed(high) &- eight)
        }
    }

    @inline(never) static func q4_1(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        legacy(m, rows, a, y, blockBytes: 20, minimum: true) { block in
            let (low, high) = nibbles(block, 4)
            return (signed(low), signed(high))
        }
    }

    @inline(never) static func q5_0(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        let sixteen = Words(repeating: 16)
        legacy(m, rows, a, y, blockBytes: 22, minimum: false) { block in
            let (low, high) = fifthBitsAndNibbles(block, 2)
            return (signed(low) &- sixteen, signed(high) &- sixteen)
        }
    }

    @inline(never) static func q5_1(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        legacy(m, rows, a, y, blockBytes: 24, minimum: true) { block in
            let (low, high) = fifthBitsAndNibbles(block, 4)
            return (signed(low), signed(high))
        }
    }

    @inline(never) static func iq4_nl(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>) {
        codebook.withUnsafeBufferPointer { table in
            legacy(m, rows, a, y, blockBytes: 18, minimum: false) { block in iq4(block + 2, table.baseAddress!) }
        }
    }

    /// Q5's five-bit values: `qh` (bit e for element e) at `offset`, the nibbles after it.
    @inline(__always) static func fifthBitsAndNibbles(_ block: UnsafeRawPointer, _ offset: Int) -> (Lanes, Lanes) {
        let (low, high) = nibbles(block, offset + 4)
        return (low | fifthBits(UInt16(littleEndian: block.loadUnaligned(fromByteOffset: offset, as: UInt16.self))),
                high | fifthBits(UInt16(littleEndian: block.loadUnaligned(fromByteOffset: offset + 2, as: UInt16.self))))
    }

    /// IQ4's codebook (ggml-common.h, `kvalues_iq4nl`).
    static let codebook: [Int16] = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]

    /// 16 bytes of IQ4 indices in the legacy nibble order, looked up one by one: SSE2 and AVX2 have no
    /// 16-bit table lookup the compiler reaches from Swift's SIMD types.
    @inline(__always) static func iq4(_ p: UnsafeRawPointer, _ table: UnsafePointer<Int16>) -> (Words, Words) {
        var low = Words(), high = Words()
        for i in 0..<16 {
            let byte = Int(p.load(fromByteOffset: i, as: UInt8.self))
            low[i] = table[byte & 15]
            high[i] = table[byte >> 4]
        }
        return (low, high)
    }

    /// Rows of blocks of `blockBytes`: a half scale d at 0, with `minimum` a half m at 2 (value = d·q + m), and
    /// values `unpack` reads. Two rows per pass share the loads of the activations and of their steps and the
    /// loop's counting; each row's sums are formed exactly as they would be alone, so its result does not depend
    /// on its partner (nor on how rows are split among threads).
    @inline(__always)
    static func legacy(_ m: QuantizedMatrix, _ rows: Range<Int>, _ a: QuantizedActivations, _ y: UnsafeMutablePointer<Float>,
                       blockBytes: Int, minimum: Bool, _ unpack: (UnsafeRawPointer) -> (Words, Words)) {
        @inline(__always) func accumulate(_ block: UnsafeRawPointer, _ g: Int, _ sums: inout RowSums) {
            let (low, high) = unpack(block)
            add(&sums.products, g, dot(low, high, a, g) * (half(block, 0) * a.scales[g]))
            if minimum { add(&sums.minimums, g, half(block, 2) * a.sums[g]) }
        }
        var r = rows.lowerBound
        while r + 1 < rows.upperBound {
            let (w0, w1) = (m.row(r), m.row(r + 1))
            var s0 = RowSums(), s1 = RowSums()
            for g in 0..<m.groups {
                accumulate(w0 + blockBytes * g, g, &s0)
                accumulate(w1 + blockBytes * g, g, &s1)
            }
            y[r] = s0.total(minimum)
            y[r + 1] = s1.total(minimum)
            r += 2
        }
        if r < rows.upperBound {
            var s = RowSums()
            for g in 0..<m.groups { accumulate(m.row(r) + blockBytes * g, g, &s) }
            y[r] = s.total(minimum)
        }
    }

    /// A row's running sums: the scaled products and the minimum terms, each in two chains (`add`).
    struct RowSums {
        var products = (SIMD8<Float>(), SIMD8<Float>())
        var minimums: (Float, Float) = (0, 0)

        @inline(__always) func total(_ minimum: Bool) -> Float {
            let sum = (products.0 + products.1).sum()
            return minimum ? sum + (minimums.0 + minimums.1) : sum
        }
    }
}
