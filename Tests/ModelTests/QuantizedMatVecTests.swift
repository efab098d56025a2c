import AdaptCore
import Foundation
@testable import Model
import Testing

struct QuantizedMatVecTests {
    static let allTypes: [GGMLType] = [.q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .iq4_nl, .q2_K, .q3_K, .q4_K, .q5_K, .q6_K, .iq4_xs]

    /// Blocks of `type` for rows × columns values: quantized from normal values where this project has a
    /// quantizer, else random bytes with small scales (`QuantizedModelLoadingTests.randomBlocks`).
    static func blocks(_ type: GGMLType, rows: Int, columns: Int, seed: UInt64) -> [UInt8] {
        if Quantize.writableTypes.contains(type) {
            let rng = CounterRNG(seed: seed)
            return Quantize.bytes((0..<(rows * columns)).map { Float(rng.normal(.test, step: 1, index: UInt32($0))) }, as: type)
        }
        return QuantizedModelLoadingTests.randomBlocks(type, elements: rows * columns, seed: seed)
    }

    /// How far the kernel may be from Σ w·x, row by row, and from Σ w·x̂, where x̂ is x after the kernel's 8-bit
    /// rounding (x̂ = s · q, q = round(x · 127 / m), m = max |x| over each group of 32, s = m / 127 rounded to
    /// f16 as llama.cpp stores it).
    ///
    /// - Rounding: |x − (m/127)·q| ≤ (m/127)/2 (plus one rounding of x · 127/m: a factor 1 + 2⁻²²), and
    ///   |q| ≤ 127 adds 127·|s − m/127| for the f16 step; the kernel's weights are exactly the dequantized ones,
    ///   so |Σ w·x̂ − Σ w·x| ≤ Σ |w|·(that) over the row. This is the bound the 8-bit activations imply; a real
    ///   difference is usually far below it (the errors have both signs), a wrong pairing of weights and values
    ///   far above it.
    /// - Float: the integer sums are exact; each group's sum is scaled once (two roundings) and added to one of
    ///   eight float partial sums, then the eight are added: at most (groups + 8) roundings of a sum bounded by
    ///   Σ (|d·q| + |minimum|)·|x̂| ≤ 3·max|w|·Σ|x̂| (|d·q| ≤ |w| + |minimum|, |minimum| ≤ max|w| for a block
    ///   whose values reach its minimum; the 3 also covers K-quant super-block minimums).
    static func bounds(weights w: ArraySlice<Float>, x: [Float]) -> (rounding: Double, float: Double, rounded: [Double]) {
        var rounded = [Double](repeating: 0, count: x.count)
        var rounding = 0.0
        for g in 0..<(x.count / 32) {
            let group = x[(32 * g)..<(32 * g + 32)]
            let largest = group.map(abs).max()!
            let step = largest / 127, stored = Float(Float16(step))
            let perValue = Double(step) / 2 * (1 + 0x1p-22) + 127 * abs(Double(stored) - Double(step))
            for i in (32 * g)..<(32 * g + 32) {
                rounded[i] = largest == 0 ? 0 : Double(stored) * Double((x[i] * (127 / largest)).rounded(.toNearestOrEven))
                rounding += Double(abs(w[w.startIndex + i])) * perValue
            }
        }
        let largest = Double(w.map(abs).max()!)
        let float = Double(x.count / 32 + 8) * Double(Float.ulpOfOne) * 3 * largest * rounded.map(abs).reduce(0, +)
        return (rounding, float, rounded)
    }

    /// Q4_1 and Q5_1 add minimum · Σ x̂ with Σ x̂ as llama.cpp's Q8_1 stores it: an f16 of (m/127)·Σq rather than
    /// s·Σq; the allowance, per block, is |minimum| times the difference of the two (0 for the other types).
    static func roundedSumAllowance(_ type: GGMLType, blocks: UnsafeRawBufferPointer, row r: Int, columns: Int, x: [Float]) -> Double {
        guard type == .q4_1 || type == .q5_1 else { return 0 }
        return (0..<(columns / 32)).reduce(0.0) { total, g in
            let block = blocks.baseAddress! + (r * columns / 32 + g) * type.blockBytes
            let minimum = Double(abs(Dequantize.half(block.loadUnaligned(fromByteOffset: 2, as: UInt16.self))))
            let group = x[(32 * g)..<(32 * g + 32)]
            let largest = group.map(abs).max()!
            let q = group.map { largest == 0 ? 0 : Double(($0 * (127 / largest)).rounded(.toNearestOrEven)) }.reduce(0, +)
            let step = largest / 127
            return total + minimum * abs(Double(Float(Float16(step * Float(q)))) - Double(Float(Float16(step))) * q)
        }
    }

    /// Checks `multiply` against dequantize-then-multiply on `rows` rows of `blocks`; returns the largest
    /// difference from Σ w·x as a fraction of its bound.
    @discardableResult
    static func check(_ type: GGMLType, blocks: UnsafeRawBufferPointer, rows: Int, columns: Int, x: [Float],
                      label: String) -> Double {
        var y = [Float](repeating: 0, count: rows)
        x.withUnsafeBufferPointer { QuantizedMatVec.multiply(type, blocks: blocks.baseAddress!, rows: rows, columns: columns, x: $0.baseAddress!, into: &y) }
        let w = Dequantize.toFloat(blocks, type: type, count: rows * columns)
        var worst = 0.0
        for r in 0..<rows {
            let row = w[(r * columns)..<((r + 1) * columns)]
            var (rounding, float, rounded) = bounds(weights: row, x: x)
            float += roundedSumAllowance(type, blocks: blocks, row: r, columns: columns, x: x)
            let exact = (0..<columns).reduce(0.0) { $0 + Double(row[row.startIndex + $1]) * Double(x[$1]) }
            let onRounded = (0..<columns).reduce(0.0) { $0 + Double(row[row.startIndex + $1]) * rounded[$1] }
            #expect(abs(Double(y[r]) - onRounded) <= float, "\(label) row \(r): \(y[r]) against Σ w·x̂ = \(onRounded)")
            #expect(abs(Double(y[r]) - exact) <= rounding + float, "\(label) row \(r): \(y[r]) against Σ w·x = \(exact)")
            worst = max(worst, abs(Double(y[r]) - exact) / (rounding + float))
        }
        return worst
    }

    @Test(arguments: allTypes)
    func eachKernelAgreesWithTheDequantizedProductWithinTheActivationRounding(type: GGMLType) {
        let rows = 9, columns = 512
        let bytes = Self.blocks(type, rows: rows, columns: columns, seed: 3)
        let rng = CounterRNG(seed: 5)
        // Normal values with a few large ones, as real activations have: they set their group's step.
        let x = (0..<columns).map { Float(rng.normal(.test, step: 2, index: UInt32($0))) * ($0 % 37 == 0 ? 20 : 1) }
        _ = bytes.withUnsafeBytes { Self.check(type, blocks: $0, rows: rows, columns: columns, x: x, label: type.name) }
    }

    /// The 32-value types are summed two groups at a time: a row of an odd number of groups ends with a lone
    /// one, which must count too (a dropped or doubled group is far outside the bound).
    @Test(arguments: [GGMLType.q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .iq4_nl])
    func aRowOfAnOddNumberOfGroupsIsSummedWhole(type: GGMLType) {
        let rows = 5, columns = 96
        let bytes = Self.blocks(type, rows: rows, columns: columns, seed: 6)
        let rng = CounterRNG(seed: 8)
        let x = (0..<columns).map { Float(rng.normal(.test, step: 2, index: UInt32($0))) * ($0 >= 64 ? 30 : 1) }
        _ = bytes.withUnsafeBytes { Self.check(type, blocks: $0, rows: rows, columns: columns, x: x, label: type.name) }
    }

    /// The projections and output matrix of the default model.
    @Test(.enabled(if: RealModel.isPresent, RealModel.absentReason))
    func theKernelsAgreeWithTheDequantizedProductOnRealTensors() throws {
        try Self.checkRealTensors(of: [RealModel.path])
    }

    /// Every tensor type of the default model's Q4_K_M requantization (RequantizedModelTests; `scripts/test --peers`
    /// makes the file).
    @Test(.enabled(if: RequantizedModelTests.filesArePresent, RequantizedModelTests.absentReason))
    func theKernelsAgreeWithTheDequantizedProductOnRequantizedTensors() throws {
        let entry = try #require(RequantizedModelTests.document?.files.first { $0.mix == "Q4_K_M" })
        try Self.checkRealTensors(of: [RequantizedModelTests.cache.appendingPathComponent(entry.file)])
    }

    static func checkRealTensors(of files: [URL]) throws {
        for url in files {
            let file = try GGUFFile(url: url)
            var seen: Set<GGMLType> = []
            for info in file.tensors where info.dimensions.count == 2 && QuantizedMatVec.supports(info.type) {
                guard info.name.hasPrefix("blk.0.") || !seen.contains(info.type) else { continue }
                seen.insert(info.type)
                let (columns, rows) = (info.dimensions[0], min(info.dimensions[1], 192))
                let rng = CounterRNG(seed: 7)
                let x = (0..<columns).map { Float(rng.normal(.test, step: 3, index: UInt32($0))) * ($0 % 53 == 0 ? 10 : 1) }
                let worst = Self.check(info.type, blocks: UnsafeRawBufferPointer(rebasing: file.bytes(of: info)[..<(rows * columns / info.type.blockSize * info.type.blockBytes)]),
                                       rows: rows, columns: columns, x: x, label: "\(url.lastPathComponent) \(info.name)")
                #expect(worst > 0, "a product identical to the f32 one would mean x was not rounded")
            }
        }
    }

    /// Rows are cut into fixed tasks and each row is summed the same way whoever computes it: 1, 2 and 3
    /// threads give the same bits, and so do the AVX-512, the AVX2 and the portable kernels.
    @Test(arguments: allTypes)
    func theResultRepeatsBitForBitAtOneAndTwoThreadsAndOnEveryPath(type: GGMLType) {
        let rows = 601, columns = 256
        let bytes = Self.blocks(type, rows: rows, columns: columns, seed: 4)
        let rng = CounterRNG(seed: 4)
        let x = (0..<columns).map { Float(rng.normal(.test, step: 2, index: UInt32($0))) }
        func run(_ workers: Int, _ path: QuantizedMatVec.Path) -> [UInt32] {
            var y = [Float](repeating: 0, count: rows)
            bytes.withUnsafeBytes { raw in
                x.withUnsafeBufferPointer { xp in
                    QuantizedMatVec.multiply(type, blocks: raw.baseAddress!, rows: rows, columns: columns, x: xp.baseAddress!,
                                             into: &y, workers: workers, path: path)
                }
            }
            return y.map(\.bitPattern)
        }
        let one = run(1, .portable)
        #expect(one == run(1, .portable), "again at 1 thread")
        #expect(one == run(2, .portable), "at 2 threads")
        #expect(one == run(2, .portable), "again at 2 threads")
        #expect(one == run(3, .portable), "at 3 threads")
        if QuantizedMatVec.hasAVX2 {
            #expect(one == run(1, .avx2), "AVX2 at 1 thread")
            #expect(one == run(2, .avx2), "AVX2 at 2 threads")
        }
        if QuantizedMatVec.hasVNNI {
            #expect(one == run(1, .avx512vnni), "AVX-512 VNNI at 1 thread")
            #expect(one == run(2, .avx512vnni), "AVX-512 VNNI at 2 threads")
        }
    }

    /// `VNNIRows` takes two groups per instruction: a row of an odd number of groups ends on one alone, and
    /// must still give the bits of the other paths (widths 32 to 288, random and real-looking values).
    @Test(arguments: [GGMLType.q4_0, .q4_1, .q5_0, .q5_1, .q8_0])
    func theVNNIRowsGiveTheSameBitsForOddAndEvenGroupCounts(type: GGMLType) throws {
        try #require(QuantizedMatVec.hasVNNI, "needs a CPU with AVX-512 VNNI to compare its kernels")
        for columns in [32, 64, 96, 160, 288] {
            let rows = 67
            let bytes = Self.blocks(type, rows: rows, columns: columns, seed: UInt64(columns))
            let rng = CounterRNG(seed: UInt64(columns))
            let x = (0..<columns).map { Float(rng.normal(.test, step: 5, index: UInt32($0))) * ($0 % 29 == 0 ? 30 : 1) }
            func run(_ path: QuantizedMatVec.Path) -> [UInt32] {
                var y = [Float](repeating: 0, count: rows)
                bytes.withUnsafeBytes { raw in
                    x.withUnsafeBufferPointer { xp in
                        QuantizedMatVec.multiply(type, blocks: raw.baseAddress!, rows: rows, columns: columns, x: xp.baseAddress!,
                                                 into: &y, workers: 1, path: path)
                    }
                }
                return y.map(\.bitPattern)
            }
            let portable = run(.portable)
            #expect(portable == run(.avx512vnni), "\(type.name), \(columns) columns")
            #expect(portable.contains { $0 != 0 }, "\(type.name), \(columns) columns: some row is not zero")
        }
    }

    /// The AVX2 and AVX-512 kernels convert the blocks' f16 scales with F16C, the portable one with bit arithmetic:
    /// a Q4_1 row per f16 bit pattern, as its scale and its minimum, gives the same bits on every path,
    /// subnormals, infinities and NaN payloads included.
    @Test func theScalesOfEveryHalfBitPatternGiveTheSameBitsOnEveryPath() throws {
        try #require(QuantizedMatVec.hasAVX2, "needs a CPU with AVX2 and F16C to compare the two compilations")
        let rows = 1 << 16, columns = 32
        var bytes = [UInt8](repeating: 0, count: rows * 20)
        for r in 0..<rows {
            let bits = UInt16(r)
            // Scale and minimum the same pattern: one product reads it through d, the other through m.
            bytes[20 * r] = UInt8(bits & 0xFF); bytes[20 * r + 1] = UInt8(bits >> 8)
            bytes[20 * r + 2] = UInt8(bits & 0xFF); bytes[20 * r + 3] = UInt8(bits >> 8)
            for i in 0..<16 { bytes[20 * r + 4 + i] = UInt8(truncatingIfNeeded: r &+ 37 &* i) }
        }
        let x = (0..<columns).map { Float($0 % 7) - 3 }
        func run(_ path: QuantizedMatVec.Path) -> [UInt32] {
            var y = [Float](repeating: 0, count: rows)
            bytes.withUnsafeBytes { raw in
                x.withUnsafeBufferPointer { xp in
                    QuantizedMatVec.multiply(.q4_1, blocks: raw.baseAddress!, rows: rows, columns: columns, x: xp.baseAddress!,
                                             into: &y, workers: 1, path: path)
                }
            }
            return y.map(\.bitPattern)
        }
        let portable = run(.portable)
        for path in QuantizedMatVec.hasVNNI ? [QuantizedMatVec.Path.avx2, .avx512vnni] : [.avx2] {
            let other = run(path)
            let differing = (0..<rows).filter { portable[$0] != other[$0] }
            #expect(differing.isEmpty, "\(path): \(differing.count) patterns differ, first \(differing.first.map { String($0, radix: 16) } ?? "")")
        }
        #expect(portable.contains { Float(bitPattern: $0).isNaN } && portable.contains { Float(bitPattern: $0).isFinite },
                "the patterns reach both finite and NaN results")
    }

    @Test func theKernelChoiceIsRecordedBesideTheArithmetic() throws {
        let arithmetic = BLASArithmetic.current(threads: 1)
        #expect(arithmetic.quantizedKernels == QuantizedMatVec.kernelName)
        let forced = ProcessInfo.processInfo.environment[QuantizedMatVec.environmentVariable]
        let expected = forced == "portable" || !QuantizedMatVec.hasAVX2 ? "int8-portable-\(BLASArithmetic.architecture)"
            : forced == "avx2" || !QuantizedMatVec.hasVNNI ? "int8-avx2" : "int8-avx512vnni"
        #expect(QuantizedMatVec.kernelName == expected)
        let encoded = try JSONEncoder().encode(arithmetic)
        #expect(String(decoding: encoded, as: UTF8.self).contains("\"quantized_kernels\":\"\(expected)\""))
        // A record made before the field existed still reads, and differs in nothing.
        let old = #"{"openblas":"OpenBLAS 0.3.21","core_type":"Haswell","threads":1,"kernels":"swift-simd-x86_64","pinned":true}"#
        let decoded = try JSONDecoder().decode(BLASArithmetic.self, from: Data(old.utf8))
        #expect(decoded.quantizedKernels == nil)
    }

    @Test func halfToFloatMatchesFloat16ForEveryBitPattern() {
        let mismatches = (0...UInt16.max).filter { bits in
            let expected = Float(Float16(bitPattern: bits))
            let actual = Dequantize.half(bits.littleEndian)
            return !(actual.bitPattern == expected.bitPattern || (actual.isNaN && expected.isNaN))
        }
        #expect(mismatches.isEmpty, "first mismatch: \(mismatches.first.map { String($0, radix: 16) } ?? "")")
    }
}
