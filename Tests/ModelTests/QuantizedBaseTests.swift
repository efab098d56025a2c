import AdaptCore
import Foundation
import Model
import Testing
import TestSupport

/// A model whose base stays quantized (`BaseWeightStorage.quantized`) dequantizes each matrix into a workspace
/// and runs the same sgemm calls on the same values as the f32 copy: with one output tile (a vocabulary of at
/// most `BaseMatrix.outputTileRows`) every pass has the f32 path's bits. With several tiles OpenBLAS blocks a
/// tile's rows otherwise than the whole matrix's for some row counts, so a few logits differ in their last
/// bit, and the loss and gradients by as little. Measured on the default model (48 tokens): the same bits at one
/// thread; at two, gradients within 3.4e-6 of each tensor's largest and the loss within 2.6e-11 relative; the
/// scoring loss (OpenBLAS's own threads over the tiles) within 2.6e-8 relative. The bounds below are about
/// thirty times those (the training loss: forty).
struct QuantizedBaseTests {
    static func sequence(length: Int, seed: UInt64, vocabulary: Int) -> TrainingSequence {
        let rng = CounterRNG(seed: seed)
        let tokens = (0..<length).map { Int(rng.block(.test, step: 0, index: UInt32($0)).0 % UInt32(vocabulary)) }
        return TrainingSequence(tokens: tokens, weights: (0..<(length - 1)).map { $0 < length / 3 ? 0 : 1 })
    }

    static func adapter(for model: LlamaModel, dropout: Float) -> LoRAParameters {
        // Every projection llama trains: the fused pairs are phi3's, and on the real model they only double the time.
        let targets = Projection.allCases.filter(\.members.isEmpty)
        var lora = LoRAParameters.initialized(for: model, config: LoRAConfig(rank: 8, alpha: 16, dropout: dropout, targets: targets), seed: 5)
        let rng = CounterRNG(seed: 5)
        for i in lora.names.indices where lora.names[i].hasSuffix("lora_b") {
            lora.values[i] = lora.values[i].indices.map { Float(rng.normal(.test, step: UInt64(i), index: UInt32($0))) * 0.02 }
        }
        return lora
    }

    /// Compares two training results: equal bits, or within relative 1e-9 (loss) and 1e-4 of the tensor's
    /// largest gradient (each gradient tensor).
    static func expectAgreement(_ a: (loss: Double, weightSum: Double, gradients: [[Float]]),
                                _ b: (loss: Double, weightSum: Double, gradients: [[Float]]), exact: Bool) {
        if exact {
            #expect(a.loss.bitPattern == b.loss.bitPattern)
            #expect(a.gradients.map { $0.map(\.bitPattern) } == b.gradients.map { $0.map(\.bitPattern) })
        } else {
            #expect(abs(a.loss - b.loss) <= 1e-9 * abs(a.loss))
            var worst: Float = 0
            for (x, y) in zip(a.gradients, b.gradients) {
                let relative = maxAbsDifference(x, y) / max(x.map(abs).max()!, .leastNormalMagnitude)
                worst = max(worst, relative)
                #expect(relative <= 1e-4)
            }
            print("quantized against f32 base: loss \(a.loss) vs \(b.loss), largest gradient difference \(worst) of the tensor's largest")
        }
    }

    @Test(arguments: TinyModel.variants, [GGMLType.q4_1, .q8_0])
    func withOneOutputTileEveryArchitecturesPassesGiveTheF32BasesBits(variant: String, type: GGMLType) throws {
        let url = TemporaryDirectory("quantized-base").file("\(variant)-\(type.name).gguf")
        var tiny = TinyModel(seed: 9, variant: variant)
        tiny.weightType = type
        tiny.embeddingType = type
        try tiny.write(to: url)
        let f32 = try LlamaModel(url: url, quantizedDecode: false)
        let quantized = try LlamaModel(url: url, quantizedDecode: false, base: .quantized)
        #expect(quantized.weightBytes < f32.weightBytes / 10)
        let tokens = [1, 40, 30, 7, 99, 15, 3, 25, 61, 2, 17, 88]
        var c1 = KVCache(), c2 = KVCache()
        #expect(f32.forwardAll(tokens: tokens, cache: &c1).map(\.bitPattern) == quantized.forwardAll(tokens: tokens, cache: &c2).map(\.bitPattern))
        // A single token (sgemv) on top of the cache.
        #expect(f32.forward(tokens: [5], cache: &c1).map(\.bitPattern) == quantized.forward(tokens: [5], cache: &c2).map(\.bitPattern))
        #expect(f32.referenceForward(tokens: tokens) == quantized.referenceForward(tokens: tokens))
        let lora = Self.adapter(for: f32, dropout: 0.1)
        let batch = [Self.sequence(length: 40, seed: 1, vocabulary: f32.hyperparameters.vocabularySize)]
        for threads in [1, 2] {
            let a = try f32.lossAndGradients(batch, lora: lora, dropoutSeed: 3, step: 1, threads: threads)
            let b = try quantized.lossAndGradients(batch, lora: lora, dropoutSeed: 3, step: 1, threads: threads)
            Self.expectAgreement(a, b, exact: true)   // one output tile: nothing is split
        }
    }

    /// The default model (Q4_1), over 3840-row tiles of the 49,152-token vocabulary: the quantized storage
    /// repeats bit for bit at 1 and at 2 threads and agrees with the f32 one.
    @Test(.enabled(if: RealModel.isPresent, RealModel.absentReason))
    func realModelTrainingRepeatsAndAgreesWithTheF32Base() throws {
        try trainingRepeatsAndAgreesWithTheF32Base(file: "default")
    }

    /// The same on its Q4_K_M requantization, made by llama.cpp's quantizer (`scripts/test --peers`).
    @Test(.enabled(if: RealModel.isPresent, RealModel.absentReason))
    func requantizedModelTrainingRepeatsAndAgreesWithTheF32Base() throws {
        try trainingRepeatsAndAgreesWithTheF32Base(file: "Q4_K_M")
    }

    func trainingRepeatsAndAgreesWithTheF32Base(file: String) throws {
        let url = file == "default" ? RealModel.path : RequantizedModelTests.cache.appendingPathComponent("SmolLM2-135M-Instruct.Q4_K_M.gguf")
        try #require(FileManager.default.fileExists(atPath: url.path), "the requantized files are made by scripts/fixtures/requantized_reference.py (scripts/test --peers)")
        let ggufFile = try GGUFFile(url: url)
        let f32 = file == "default" ? RealModel.model : try LlamaModel(file: ggufFile)
        let quantized = try LlamaModel(file: ggufFile, base: .quantized)
        #expect(quantized.weightBytes < 1 << 20)
        let lora = Self.adapter(for: f32, dropout: 0.05)
        let batch = [Self.sequence(length: 48, seed: 2, vocabulary: f32.hyperparameters.vocabularySize)]
        for threads in [1, 2] {
            let a = try f32.lossAndGradients(batch, lora: lora, dropoutSeed: 3, step: 1, threads: threads)
            let b = try quantized.lossAndGradients(batch, lora: lora, dropoutSeed: 3, step: 1, threads: threads)
            let again = try quantized.lossAndGradients(batch, lora: lora, dropoutSeed: 3, step: 1, threads: threads)
            Self.expectAgreement(b, again, exact: true)
            Self.expectAgreement(a, b, exact: false)
        }
        let x = batch[0]
        let (l1, l2) = (f32.loss([x], lora: lora).loss, quantized.loss([x], lora: lora).loss)
        #expect(abs(l1 - l2) <= 1e-6 * l1)
        let prompt = Array(x.tokens.prefix(20)), completion = Array(x.tokens.dropFirst(20))
        for (p, q) in zip(f32.logProbabilities(of: completion, after: prompt, lora: lora), quantized.logProbabilities(of: completion, after: prompt, lora: lora)) {
            #expect(abs(p - q) <= 1e-5)
        }
    }
}
