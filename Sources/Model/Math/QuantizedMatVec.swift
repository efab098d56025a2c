import Dispatch

/// y (rows) = W (rows, columns) · x (columns) straight from GGML's quantized blocks, for single-token decoding.
///
/// Decoding one token touches every weight once, so its speed is the speed of reading them: Q4_1 blocks are
/// a sixth of the f32 matrix. The weights are exactly the values `Dequantize` produces; only the order of the
/// additions differs from the f32 path (per block: d·Σ q·x, plus m·Σ x for Q4_1).
///
/// The inner loop stays in 4-lane integer and float operations the compiler maps to SSE: 16 bytes are read
/// as four 32-bit words, byte k of every word is isolated with a shift and a mask, and turned into a float
/// with the 2²³ trick (the bits 0x4B00_0000 | n are the float 8388608 + n). Lane i then holds byte 4i + k, so
/// x is permuted once per call into that order.
///
/// Rows are split over `BLAS.threads` workers; a row's sum is computed the same way whatever the split, so the
/// result does not depend on the thread count.
enum QuantizedMatVec {
    static func supports(_ type: GGMLType) -> Bool { type == .q4_0 || type == .q4_1 || type == .q8_0 }

    static func multiply(_ type: GGMLType, blocks: UnsafeRawPointer, rows: Int, columns: Int,
                         x: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>, workers requested: Int? = nil) {
        precondition(columns % 32 == 0 && supports(type))
        let perRow = columns / 32
        // x permuted per block: for k in 0..<4, the 4 values of the first half whose byte index ≡ k (mod 4),
        // then the 4 matching values of the second half (Q4: the high nibbles; Q8_0: bytes 16…31).
        var permuted = [Float](repeating: 0, count: columns)
        var blockSums = [Float](repeating: 0, count: perRow)
        for b in 0..<perRow {
            let xb = x + 32 * b
            for k in 0..<4 {
                for i in 0..<4 {
                    permuted[32 * b + 8 * k + i] = xb[4 * i + k]
                    permuted[32 * b + 8 * k + 4 + i] = xb[16 + 4 * i + k]
                }
            }
            var s: Float = 0
            for j in 0..<32 { s += xb[j] }
            blockSums[b] = s
        }
        permuted.withUnsafeBufferPointer { xp in
            blockSums.withUnsafeBufferPointer { sums in
                let job = RowJob(type: type, blocks: blocks, perRow: perRow, x: UnsafeRawPointer(xp.baseAddress!),
                                 sums: sums.baseAddress!, y: y)
                // Small matrices are not worth waking workers for.
                let workers = requested ?? (rows >= 512 ? min(BLAS.threads, 8) : 1)
                if workers == 1 {
                    computeRows(job, 0..<rows)
                } else {
                    let chunk = (rows + workers - 1) / workers
                    DispatchQueue.concurrentPerform(iterations: workers) { w in
                        computeRows(job, (w * chunk)..<min(rows, (w + 1) * chunk))
                    }
                }
            }
        }
    }

    /// What the row workers share. Unchecked because it carries raw pointers: every pointee outlives the
    /// `concurrentPerform` call that uses it (the call blocks until all workers finish), the inputs are only
    /// read, and each worker writes only its own rows of `y`.
    struct RowJob: @unchecked Sendable {
        let type: GGMLType
        let blocks: UnsafeRawPointer
        let perRow: Int
        let x: UnsafeRawPointer          // permuted x
        let sums: UnsafePointer<Float>   // Σx per block
        let y: UnsafeMutablePointer<Float>
    }

    static func computeRows(_ job: RowJob, _ range: Range<Int>) {
        let (type, perRow) = (job.type, job.perRow)
        let magic = SIMD4<UInt32>(repeating: 0x4B00_0000)
        @inline(__always) func floats(_ bits: SIMD4<UInt32>) -> SIMD4<Float> { unsafeBitCast(bits | magic, to: SIMD4<Float>.self) }
        let low4 = SIMD4<UInt32>(repeating: 0x0F), low8 = SIMD4<UInt32>(repeating: 0xFF), signBit = SIMD4<UInt32>(repeating: 0x80)
        for r in range {
            // Vector accumulators; one horizontal sum per row.
            var accumulator = SIMD4<Float>(repeating: 0)
            var minimumTerm: Float = 0
            switch type {
            case .q4_0, .q4_1:
                let size = type == .q4_1 ? 20 : 18
                // Q4_0's stored nibble n means n − 8; Q4_1's means n (its minimum is added separately).
                let bias: Float = type == .q4_1 ? 8_388_608 : 8_388_616
                var block = job.blocks + r * perRow * size
                for b in 0..<perRow {
                    let d = Dequantize.half(block.loadUnaligned(as: UInt16.self))
                    let words = block.loadUnaligned(fromByteOffset: size - 16, as: SIMD4<UInt32>.self)
                    // Two independent partial sums halve the chain of dependent additions.
                    var dotLow = SIMD4<Float>(repeating: 0), dotHigh = SIMD4<Float>(repeating: 0)
                    let xb = job.x + 128 * b
                    for k in 0..<4 {
                        let shifted = words &>> UInt32(8 * k)
                        let lo = floats(shifted & low4) - bias
                        let hi = floats((shifted &>> 4) & low4) - bias
                        dotLow += lo * xb.loadUnaligned(fromByteOffset: 32 * k, as: SIMD4<Float>.self)
                        dotHigh += hi * xb.loadUnaligned(fromByteOffset: 32 * k + 16, as: SIMD4<Float>.self)
                    }
                    accumulator += d * (dotLow + dotHigh)
                    if type == .q4_1 {
                        minimumTerm += Dequantize.half(block.loadUnaligned(fromByteOffset: 2, as: UInt16.self)) * job.sums[b]
                    }
                    block += size
                }
            default:  // .q8_0: signed bytes, offset by 128 to use the same trick.
                var block = job.blocks + r * perRow * 34
                for b in 0..<perRow {
                    let d = Dequantize.half(block.loadUnaligned(as: UInt16.self))
                    let first = block.loadUnaligned(fromByteOffset: 2, as: SIMD4<UInt32>.self)
                    let second = block.loadUnaligned(fromByteOffset: 18, as: SIMD4<UInt32>.self)
                    var dotFirst = SIMD4<Float>(repeating: 0), dotSecond = SIMD4<Float>(repeating: 0)
                    let xb = job.x + 128 * b
                    for k in 0..<4 {
                        let a = floats(((first &>> UInt32(8 * k)) & low8) ^ signBit) - 8_388_736
                        let c = floats(((second &>> UInt32(8 * k)) & low8) ^ signBit) - 8_388_736
                        dotFirst += a * xb.loadUnaligned(fromByteOffset: 32 * k, as: SIMD4<Float>.self)
                        dotSecond += c * xb.loadUnaligned(fromByteOffset: 32 * k + 16, as: SIMD4<Float>.self)
                    }
                    accumulator += d * (dotFirst + dotSecond)
                    block += 34
                }
            }
            job.y[r] = accumulator.sum() + minimumTerm
        }
    }

    /// The same product from dequantized values with a Double accumulator: the test oracle.
    static func reference(_ type: GGMLType, blocks: UnsafeRawBufferPointer, rows: Int, columns: Int, x: [Float]) -> [Float] {
        let w = Dequantize.toFloat(blocks, type: type, count: rows * columns)
        return (0..<rows).map { r in Float((0..<columns).reduce(0.0) { $0 + Double(w[r * columns + $1]) * Double(x[$1]) }) }
    }
}
