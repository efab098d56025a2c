import AdaptCore
import Foundation
@testable import Model
import Testing

/// The prompt pass's tile kernels against dequantize-then-f32, within the bound the 8-bit activations imply.
///
/// Each token's row is rounded as decode rounds it, so x̂ is the x̂ of `QuantizedMatVecTests.bounds`: each value
/// moves by at most half its group's step (plus the f16 step's error), and |Σ w·x̂ − Σ w·x| ≤ Σ over the groups
/// of that movement times Σ |w| in the group. The weights the kernel reads are the dequantized ones (q exact in
/// bytes, the scale and the offset each one float product as in `Dequantize`), and the integer sums are exact;
/// the floats are each sub-block's scale · step (one rounding), its fused addition, and for the types with a
/// minimum one more fused addition: at most 3 roundings per 16 columns, plus the scale and offset products, of
/// a running sum bounded by Σ (|d·q| + |minimum|)·|x̂| ≤ 3·max|w|·Σ|x̂| (the argument of `bounds`).
@Suite(.enabled(if: QuantizedMatMul.isAvailable, "the tile kernels are turned off here (ADAPT_PROMPT_KERNELS=sgemm)"))
struct QuantizedMatMulTests {
    static let types: [GGMLType] = [.q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .iq4_nl, .iq4_xs, .q2_K, .q3_K, .q4_K, .q5_K, .q6_K]

    /// Y (tokens, rows) through `QuantizedMatMul`.
    static func multiply(_ type: GGMLType, blocks: UnsafeRawBufferPointer, rows: Int, columns: Int, x: [Float], tokens: Int,
                         workers: Int = 1) -> [Float] {
        var y = [Float](repeating: .nan, count: tokens * rows)
        x.withUnsafeBufferPointer { xp in
            y.withUnsafeMutableBufferPointer { yp in
                QuantizedMatMul.multiply([QuantizedMatVec.Product(type: type, blocks: blocks.baseAddress!, rows: rows, y: yp.baseAddress!)],
                                         tokens: tokens, columns: columns, x: xp.baseAddress!, workers: workers)
            }
        }
        return y
    }

    /// Checks every (token, row) against Σ w·x̂ and Σ w·x; returns the largest difference from Σ w·x as a
    /// fraction of its bound.
    @discardableResult
    static func check(_ type: GGMLType, blocks: UnsafeRawBufferPointer, rows: Int, columns: Int, x: [Float], tokens: Int,
                      label: String) -> Double {
        let y = multiply(type, blocks: blocks, rows: rows, columns: columns, x: x, tokens: tokens)
        let w = Dequantize.toFloat(blocks, type: type, count: rows * columns)
        var worst = 0.0
        for t in 0..<tokens {
            let xt = Array(x[(t * columns)..<((t + 1) * columns)])
            for r in 0..<rows {
                let row = w[(r * columns)..<((r + 1) * columns)]
                let (rounding, _, rounded) = QuantizedMatVecTests.bounds(weights: row, x: xt)
                let largest = Double(row.map(abs).max()!)
                var float = Double(3 * columns / 16 + 4) * Double(Float.ulpOfOne) * 3 * largest * rounded.map(abs).reduce(0, +)
                float += QuantizedMatVecTests.roundedSumAllowance(type, blocks: blocks, row: r, columns: columns, x: xt)
                let exact = (0..<columns).reduce(0.0) { $0 + Double(row[row.startIndex + $1]) * Double(xt[$1]) }
                let onRounded = (0..<columns).reduce(0.0) { $0 + Double(row[row.startIndex + $1]) * rounded[$1] }
                let value = Double(y[t * rows + r])
                #expect(abs(value - onRounded) <= float, "\(label) token \(t) row \(r): \(value) against Σ w·x̂ = \(onRounded)")
                #expect(abs(value - exact) <= rounding + float, "\(label) token \(t) row \(r): \(value) against Σ w·x = \(exact)")
                worst = max(worst, abs(value - exact) / (rounding + float))
            }
        }
        return worst
    }

    /// Normal values with a few large ones, as real activations have (they set their group's step).
    static func activations(tokens: Int, columns: Int, seed: UInt64, every spike: Int = 37) -> [Float] {
        let rng = CounterRNG(seed: seed)
        return (0..<(tokens * columns)).map { Float(rng.normal(.test, step: 2, index: UInt32($0))) * ($0 % spike == 0 ? 20 : 1) }
    }

    /// 37 rows (two whole tiles of 16 and one of 5) and 11 tokens (one whole tile of 8 and one of 3): the edges
    /// of both tilings, whose padding lanes must neither add to nor overwrite a real output.
    @Test(arguments: types)
    func eachTypeAgreesWithTheDequantizedProductAcrossTileEdges(type: GGMLType) {
        let (rows, columns, tokens) = (37, 512, 11)
        let bytes = QuantizedMatVecTests.blocks(type, rows: rows, columns: columns, seed: 3)
        let x = Self.activations(tokens: tokens, columns: columns, seed: 5)
        let worst = bytes.withUnsafeBytes { Self.check(type, blocks: $0, rows: rows, columns: columns, x: x, tokens: tokens, label: type.name) }
        #expect(worst > 0, "a product identical to the f32 one would mean x was not rounded")
    }

    /// Outputs past the rows and tokens asked for are never written.
    @Test func writesOnlyTheRowsAndTokensAskedFor() {
        let (rows, columns, tokens) = (5, 64, 3)
        let bytes = QuantizedMatVecTests.blocks(.q4_1, rows: rows, columns: columns, seed: 9)
        let x = Self.activations(tokens: tokens, columns: columns, seed: 9)
        var y = [Float](repeating: 7, count: tokens * rows + 64)
        bytes.withUnsafeBytes { blocks in
            x.withUnsafeBufferPointer { xp in
                y.withUnsafeMutableBufferPointer { yp in
                    QuantizedMatMul.multiply([QuantizedMatVec.Product(type: .q4_1, blocks: blocks.baseAddress!, rows: rows, y: yp.baseAddress!)],
                                             tokens: tokens, columns: columns, x: xp.baseAddress!, workers: 1)
                }
            }
        }
        #expect(y[(tokens * rows)...].allSatisfy { $0 == 7 })
        #expect(y[..<(tokens * rows)].allSatisfy { $0 != 7 && $0.isFinite })
    }

    /// The default model's tensors.
    @Test(.enabled(if: RealModel.isPresent, RealModel.absentReason))
    func eachTypeAgreesWithTheDequantizedProductOnRealTensors() throws {
        let checked = try Self.checkRealTensors(of: [RealModel.path])
        #expect(checked.contains(.q4_1))
    }

    /// Every type of the default model's requantizations (Q4_K_M, Q5_K_M, Q6_K, Q3_K_M, Q2_K, IQ4_XS and their
    /// fallback types; RequantizedModelTests; `scripts/test --peers` makes the files).
    @Test(.enabled(if: RequantizedModelTests.filesArePresent, RequantizedModelTests.absentReason))
    func eachTypeAgreesWithTheDequantizedProductOnRequantizedTensors() throws {
        let entries = try #require(RequantizedModelTests.document?.files)
        let checked = try Self.checkRealTensors(of: entries.map { RequantizedModelTests.cache.appendingPathComponent($0.file) })
        #expect(checked.isSuperset(of: [.q4_K, .q6_K]))
    }

    /// The types it checked.
    static func checkRealTensors(of files: [URL]) throws -> Set<GGMLType> {
        var checked: Set<GGMLType> = []
        for url in files where FileManager.default.fileExists(atPath: url.path) {
            let file = try GGUFFile(url: url)
            var seen: Set<String> = []
            for info in file.tensors where info.dimensions.count == 2 && info.name.hasPrefix("blk.") && QuantizedMatMul.supports(info.type) {
                let key = "\(info.type) \(info.dimensions)"
                guard !seen.contains(key) else { continue }
                seen.insert(key)
                checked.insert(info.type)
                let (columns, rows, tokens) = (info.dimensions[0], min(info.dimensions[1], 40), 9)
                let x = Self.activations(tokens: tokens, columns: columns, seed: 7, every: 53)
                let blocks = UnsafeRawBufferPointer(rebasing: file.bytes(of: info)[..<(rows * columns / info.type.blockSize * info.type.blockBytes)])
                let worst = Self.check(info.type, blocks: blocks, rows: rows, columns: columns, x: x, tokens: tokens,
                                       label: "\(url.lastPathComponent) \(info.name)")
                #expect(worst > 0, "a product identical to the f32 one would mean x was not rounded")
            }
        }
        return checked
    }

    /// Tasks are fixed tiles of 16 rows, each computing every token the same way whoever runs it.
    @Test(arguments: types)
    func theResultRepeatsBitForBitAtOneTwoAndThreeThreads(type: GGMLType) {
        let (rows, columns, tokens) = (301, 256, 19)
        let bytes = QuantizedMatVecTests.blocks(type, rows: rows, columns: columns, seed: 4)
        let x = Self.activations(tokens: tokens, columns: columns, seed: 4)
        func run(_ workers: Int) -> [UInt32] {
            bytes.withUnsafeBytes { Self.multiply(type, blocks: $0, rows: rows, columns: columns, x: x, tokens: tokens, workers: workers) }.map(\.bitPattern)
        }
        let one = run(1)
        #expect(one == run(1), "again at 1 thread")
        #expect(one == run(2), "at 2 threads")
        #expect(one == run(2), "again at 2 threads")
        #expect(one == run(3), "at 3 threads")
    }

    /// Every token's bytes, steps and sums are decode's (`QuantizedMatVec.quantize`) bit for bit, zero groups and
    /// groups that are not finite included, so a prompt reads the values a decoded token would.
    @Test func promptActivationsAreRoundedExactlyAsDecodeRoundsThem() {
        let (tokens, columns) = (11, 256)
        var x = Self.activations(tokens: tokens, columns: columns, seed: 12)
        for i in 0..<32 { x[columns + 64 + i] = 0 }
        x[3 * columns + 7] = .nan
        x[5 * columns + 200] = -.infinity
        let groups = columns / 32
        let prompt = x.withUnsafeBufferPointer { PromptActivations($0.baseAddress!, tokens: tokens, columns: columns) }
        defer { prompt.deallocate() }
        let tiles = prompt.tiles
        var values = [UInt8](repeating: 0, count: 96 * groups), bytes = [Int8](repeating: 0, count: columns)
        var steps = [Float](repeating: 0, count: groups), sums = steps, halfSums = [Int32](repeating: 0, count: 2 * groups)
        func same(_ a: Float, _ b: Float) -> Bool { a.bitPattern == b.bitPattern || (a.isNaN && b.isNaN) }
        for t in 0..<tokens {
            x.withUnsafeBufferPointer { xp in
                QuantizedMatVec.quantize(xp.baseAddress! + t * columns, groups: groups, values: &values, scales: &steps, halfSums: &halfSums,
                                         sums: &sums, bytes: &bytes)
            }
            let (tile, lane) = t.quotientAndRemainder(dividingBy: 8)
            for q in 0..<(columns / 4) {
                let word = tiles.bytes[tile * tiles.tileWords + 8 * q + lane]
                let expected = (0..<4).reduce(UInt32(0)) { $0 | UInt32(UInt8(bitPattern: bytes[4 * q + $1]) ^ 0x80) << (8 * $1) }
                #expect(word == expected, "token \(t) columns \(4 * q)…")
            }
            let f = tile * tiles.tileFloats + lane
            for g in 0..<groups {
                let (low, high) = (Float(halfSums[2 * g]), Float(halfSums[2 * g + 1]))
                #expect(same(tiles.steps32[f + 8 * g], steps[g]) && same(tiles.steps16[f + 16 * g], steps[g])
                        && same(tiles.steps16[f + 16 * g + 8], steps[g]), "token \(t) group \(g) step")
                #expect(same(tiles.roundedSums32[f + 8 * g], sums[g]), "token \(t) group \(g) rounded Σx̂")
                #expect(same(tiles.sums32[f + 8 * g], steps[g] * (low + high)), "token \(t) group \(g) Σx̂")
                #expect(same(tiles.sums16[f + 16 * g], steps[g] * low) && same(tiles.sums16[f + 16 * g + 8], steps[g] * high),
                        "token \(t) group \(g) half Σx̂")
            }
        }
    }

    /// A group that is not finite makes its outputs NaN, as the f32 product would, instead of a number.
    @Test func aNonFiniteActivationGivesNaNNotANumber() {
        let (rows, columns, tokens) = (3, 64, 2)
        let bytes = QuantizedMatVecTests.blocks(.q8_0, rows: rows, columns: columns, seed: 2)
        var x = Self.activations(tokens: tokens, columns: columns, seed: 2)
        x[columns + 40] = .infinity
        let y = bytes.withUnsafeBytes { Self.multiply(.q8_0, blocks: $0, rows: rows, columns: columns, x: x, tokens: tokens) }
        #expect(y[..<rows].allSatisfy { $0.isFinite })
        #expect(y[rows...].allSatisfy { $0.isNaN })
    }

    /// A prompt of inference with `quantizedPrompt` reads the blocks: its last logits stay within 5% of the
    /// largest logit of the f32 pass (as decode does, `LlamaModelTests`), differ from it (the blocks were read),
    /// and repeat bit for bit. Without it the pass is the f32 one.
    @Test(arguments: [GGMLType.q4_1, .q8_0])
    func aPromptPassReadsTheBlocksOnlyWhenAsked(type: GGMLType) {
        let model = Tiny.load({ $0.weightType = type; $0.embeddingType = type }, name: "tiny-prompt-\(type.name).gguf")
        var plain = KVCache(), once = KVCache(), twice = KVCache()
        let f32 = model.forward(tokens: Tiny.tokens, cache: &plain)
        let first = model.forward(tokens: Tiny.tokens, cache: &once, quantizedPrompt: true)
        #expect(first != f32, "the prompt pass read the f32 copy")
        #expect(maxAbsDifference(first, f32) <= 0.05 * f32.map(abs).max()!)
        #expect(model.forward(tokens: Tiny.tokens, cache: &twice, quantizedPrompt: true).map(\.bitPattern) == first.map(\.bitPattern))
    }

    /// A prompt of inference computes its products in fixed tiles and its attention heads and SwiGLU in fixed
    /// pieces with single-threaded OpenBLAS, so its logits are the same bits at one thread and at two.
    @Test func aPromptPassGivesTheSameBitsAtOneAndTwoThreads() {
        let model = Tiny.load({ $0.weightType = .q4_1; $0.embeddingType = .q4_1 }, name: "tiny-prompt-threads.gguf")
        func prompt(threads: Int) -> [UInt32] {
            BLAS.withThreadCount(threads) {
                var cache = KVCache()
                return model.forward(tokens: Tiny.tokens, cache: &cache, quantizedPrompt: true)
            }.map(\.bitPattern)
        }
        let one = prompt(threads: 1)
        #expect(one == prompt(threads: 2))
        #expect(one == prompt(threads: 1))
    }

    /// The prompt pass's SwiGLU is within 4 units in the last place of the scalar one (a libm `expf` per value)
    /// over the range activations reach and beyond, with 0, infinities and NaN as the scalar one gives them, and
    /// an odd count (the masked tail).
    @Test func theVectorSwiGLUStaysWithinAFewUlpOfTheScalarOne() {
        var gate = (0..<4001).map { Float($0 - 2000) * 0.05 }                  // −100 … 100
        gate += [0, -0.0, 1e-30, -1e-30, 88, -88, 104, -104, 200, -200, .infinity, -.infinity, .nan]
        let up = gate.indices.map { Float(($0 % 7) - 3) * 0.7 + 0.1 }
        var fast = [Float](repeating: 0, count: gate.count), scalar = fast
        QuantizedMatMul.swiglu(gate: gate, up: up, count: gate.count, into: &fast)
        Kernels.swiglu(gate: gate, up: up, count: gate.count, into: &scalar)
        for i in gate.indices {
            if scalar[i].isNaN { #expect(fast[i].isNaN, "g \(gate[i])"); continue }
            #expect(fast[i] == scalar[i] || abs(fast[i] - scalar[i]) <= 4 * scalar[i].ulp + Float.leastNormalMagnitude,
                    "g \(gate[i]): \(fast[i]) against \(scalar[i])")
        }
    }
}
