import AdaptCore
import Foundation
@testable import Model
import Testing
import TestSupport

/// Training and scoring passes of a base kept quantized whose forward products run on the int8 tile kernels
/// (`ForwardProducts.int8`): the activations are rounded to 8 bits per group of 32 before each product, so the
/// loss and the gradients move away from the sgemm pass's by that rounding, not by a last bit. The backward still
/// multiplies the dequantized f32 values. The tolerances below are stated against measured differences.
@Suite(.enabled(if: QuantizedMatMul.isAvailable, "the tile kernels are turned off here (ADAPT_PROMPT_KERNELS=sgemm)"))
struct Int8ForwardTrainingTests {
    typealias Result = (loss: Double, weightSum: Double, gradients: [[Float]])

    /// The largest difference of each gradient tensor relative to its largest value, over all tensors.
    static func worstGradientDifference(_ a: Result, _ b: Result) -> Float {
        zip(a.gradients, b.gradients).map { x, y in maxAbsDifference(x, y) / max(x.map(abs).max()!, .leastNormalMagnitude) }.max() ?? 0
    }

    /// The smallest cosine similarity between the two results' gradient tensors: whether the step goes the same way.
    static func leastGradientCosine(_ a: Result, _ b: Result) -> Double {
        zip(a.gradients, b.gradients).map { x, y in
            let dot = zip(x, y).reduce(0.0) { $0 + Double($1.0) * Double($1.1) }
            let nx = x.reduce(0.0) { $0 + Double($1) * Double($1) }, ny = y.reduce(0.0) { $0 + Double($1) * Double($1) }
            return nx == 0 && ny == 0 ? 1 : dot / (nx * ny).squareRoot()
        }.min() ?? 1
    }

    /// At one and at two threads: the sgemm pass's result and the int8 pass's, the latter checked to repeat bit for bit.
    static func compareAtEachThreadCount(_ sgemm: LlamaModel, _ int8: LlamaModel, lora: LoRAParameters, batch: [TrainingSequence],
                                         _ check: (_ threads: Int, _ a: Result, _ b: Result) -> Void) throws {
        for threads in [1, 2] {
            let a = try sgemm.lossAndGradients(batch, lora: lora, dropoutSeed: 3, step: 1, threads: threads)
            let b = try int8.lossAndGradients(batch, lora: lora, dropoutSeed: 3, step: 1, threads: threads)
            expectSameBits(b, try int8.lossAndGradients(batch, lora: lora, dropoutSeed: 3, step: 1, threads: threads))
            check(threads, a, b)
        }
    }

    static func expectSameBits(_ a: Result, _ b: Result) {
        #expect(a.loss.bitPattern == b.loss.bitPattern)
        #expect(a.gradients.map { $0.map(\.bitPattern) } == b.gradients.map { $0.map(\.bitPattern) })
    }

    @Test func theModelRecordsTheKernelsItsForwardProductsRunOn() throws {
        let url = TemporaryDirectory("int8-forward").file("tiny.gguf")
        var tiny = TinyModel(seed: 9)
        (tiny.weightType, tiny.embeddingType) = (.q4_1, .q8_0)
        try tiny.write(to: url)
        #expect(try LlamaModel(url: url, base: .quantized, forward: .int8).forwardKernels == "int8-v1")
        #expect(try LlamaModel(url: url, base: .quantized, forward: .sgemm).forwardKernels == "sgemm")
        // The f32 copy is multiplied with sgemm whatever is asked.
        #expect(try LlamaModel(url: url, base: .f32, forward: .int8).forwardKernels == "sgemm")
    }

    /// Tiny models of every architecture: each pass repeats bit for bit at one and at two threads, differs from
    /// the sgemm pass (the int8 products ran), and stays within the rounding's reach of it. Measured over the
    /// variants: loss within 1.45e-3 relative (bound 1e-2), gradients within 0.091 of each tensor's largest
    /// (bound 0.2: these models' activations are random, so each group's rounding step is large beside them).
    @Test(arguments: TinyModel.variants, [GGMLType.q4_1, .q8_0])
    func tinyModelsTrainingRepeatsAndStaysNearTheSgemmPass(variant: String, type: GGMLType) throws {
        let url = TemporaryDirectory("int8-forward").file("\(variant)-\(type.name).gguf")
        var tiny = TinyModel(seed: 9, variant: variant)
        (tiny.weightType, tiny.embeddingType) = (type, type)
        try tiny.write(to: url)
        let sgemm = try LlamaModel(url: url, quantizedDecode: false, base: .quantized)
        let int8 = try LlamaModel(url: url, quantizedDecode: false, base: .quantized, forward: .int8)
        let lora = QuantizedBaseTests.adapter(for: sgemm, dropout: 0.1)
        let batch = [QuantizedBaseTests.sequence(length: 40, seed: 1, vocabulary: sgemm.hyperparameters.vocabularySize)]
        try Self.compareAtEachThreadCount(sgemm, int8, lora: lora, batch: batch) { _, a, b in
            #expect(a.loss != b.loss)
            #expect(abs(a.loss - b.loss) <= 1e-2 * a.loss, "loss \(a.loss) sgemm, \(b.loss) int8")
            #expect(Self.worstGradientDifference(a, b) <= 0.2)
        }
    }

    /// The default model and its Q4_K_M requantization: repeats at one and two threads; the loss, the held-out
    /// loss, the gradients' directions and the teacher-forced log-probabilities stay near the sgemm pass's. The
    /// sequence is random tokens (loss about 15, far from anything trained), where the rounding weighs most:
    /// measured 4.0e-3 (default) and 5.3e-3 (Q4_K_M) relative on the loss, least cosine between gradient tensors
    /// 0.970 and 0.942, log-probabilities within 0.37 and 0.68 nats. The bounds are about twice those. On text
    /// the losses agree within 0.2% (`RealModelTrainingTests`).
    @Test(.enabled(if: RealModel.isPresent, RealModel.absentReason))
    func realModelTrainingRepeatsAndStaysNearTheSgemmPass() throws {
        try trainingRepeatsAndStaysNearTheSgemmPass(file: "default")
    }

    /// The Q4_K_M requantization, made by llama.cpp's quantizer (`scripts/test --peers`).
    @Test(.enabled(if: RealModel.isPresent, RealModel.absentReason))
    func requantizedModelTrainingRepeatsAndStaysNearTheSgemmPass() throws {
        try trainingRepeatsAndStaysNearTheSgemmPass(file: "Q4_K_M")
    }

    func trainingRepeatsAndStaysNearTheSgemmPass(file: String) throws {
        let url = file == "default" ? RealModel.path : RequantizedModelTests.cache.appendingPathComponent("SmolLM2-135M-Instruct.Q4_K_M.gguf")
        try #require(FileManager.default.fileExists(atPath: url.path), "the requantized files are made by scripts/fixtures/requantized_reference.py (scripts/test --peers)")
        let ggufFile = try GGUFFile(url: url)
        let sgemm = try LlamaModel(file: ggufFile, base: .quantized)
        let int8 = try LlamaModel(file: ggufFile, base: .quantized, forward: .int8)
        let lora = QuantizedBaseTests.adapter(for: sgemm, dropout: 0.05)
        let batch = [QuantizedBaseTests.sequence(length: 48, seed: 2, vocabulary: sgemm.hyperparameters.vocabularySize)]
        try Self.compareAtEachThreadCount(sgemm, int8, lora: lora, batch: batch) { threads, a, b in
            print("int8 against sgemm forward (\(file), \(threads) thread(s)): loss \(b.loss) vs \(a.loss), largest gradient difference \(Self.worstGradientDifference(a, b)), least cosine \(Self.leastGradientCosine(a, b))")
            #expect(abs(a.loss - b.loss) <= 1e-2 * a.loss)
            #expect(Self.leastGradientCosine(a, b) >= 0.88)
        }
        let x = batch[0]
        let (l1, l2) = (sgemm.loss([x], lora: lora).loss, int8.loss([x], lora: lora).loss)
        #expect(l1 != l2 && abs(l1 - l2) <= 1e-2 * l1)
        let prompt = Array(x.tokens.prefix(20)), completion = Array(x.tokens.dropFirst(20))
        let (p, q) = (sgemm.logProbabilities(of: completion, after: prompt, lora: lora), int8.logProbabilities(of: completion, after: prompt, lora: lora))
        let worst = zip(p, q).map { abs($0 - $1) }.max() ?? 0
        print("int8 against sgemm forward (\(file)): largest log-probability difference \(worst)")
        #expect(worst <= 1.4)
    }
}
