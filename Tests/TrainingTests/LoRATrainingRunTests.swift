import AdaptCore
import Adapters
import Foundation
import Model
import TestSupport
import Testing
@testable import Training

@Suite struct LoRATrainingRunTests {
    static let examples = [
        TrainingExample(prompt: "say hello", completion: "hello world"),
        TrainingExample(prompt: "what is it", completion: "it is the end", weight: 2),
        TrainingExample(prompt: "secret prompt words", completion: "secret completion words"),
    ]

    func tinyModel(_ directory: TemporaryDirectory) throws -> URL {
        let url = directory.file("tiny.gguf")
        try TinyModel(seed: 5).write(to: url)
        return url
    }

    @Test func promptTokensCarryNoWeightAndTheCompletionEndsItsTurn() throws {
        let directory = TemporaryDirectory()
        let url = try tinyModel(directory)
        let file = try GGUFFile(url: url)
        let tokenizer = try Tokenizer(gguf: file)
        let formatter = try ChatFormatter(gguf: file)
        let (prompt, completion) = try LoRATrainingRun.tokens(of: Self.examples[1], tokenizer: tokenizer, formatter: formatter)
        #expect(try tokenizer.decode(prompt) == (try formatter.format([.user("what is it")], addGenerationPrompt: true)))
        #expect(try tokenizer.decode(completion) == "it is the end" + formatter.endOfTurn)
        #expect(completion.contains(try #require(tokenizer.id(of: "<|im_end|>"))))

        let run = try LoRATrainingRun(modelURL: url, examples: Self.examples, lora: LoRAConfig(rank: 2, dropout: 0),
                                      configuration: TrainingConfiguration(steps: 2))
        let sequence = run.training[1]
        #expect(sequence.tokens == prompt + completion)
        #expect(sequence.weights.prefix(prompt.count - 1).allSatisfy { $0 == 0 })
        #expect(sequence.weights.suffix(completion.count).allSatisfy { $0 == 2 })
        #expect(run.configuration.adapter == AdapterSettings(rank: 2, alpha: 16, dropout: 0, targets: ["q", "k", "v", "o"]))
    }

    @Test func evaluationLossAgreesWithTheTrainingLossWithoutDropout() throws {
        let directory = TemporaryDirectory()
        let url = try tinyModel(directory)
        let run = try LoRATrainingRun(modelURL: url, examples: Self.examples, lora: LoRAConfig(rank: 2, dropout: 0),
                                      configuration: TrainingConfiguration(steps: 2))
        let source = LoRAGradientSource(model: run.model, config: run.lora, seed: 1, threads: 1)
        var parameters = LoRAGradientSource.initialParameters(for: run.model, config: run.lora, seed: 1)
        // Give B values so the adapter changes the output.
        for t in stride(from: 1, to: parameters.count, by: 2) {
            parameters.values[t] = parameters.values[t].indices.map { Float($0 % 7) * 0.05 - 0.15 }
        }
        let trained = try source.lossAndGradients(run.training, parameters: parameters, step: 0)
        let evaluated = source.loss(run.training, parameters: parameters)
        #expect(trained.weightSum == evaluated.weightSum)
        #expect(abs(trained.loss - evaluated.loss) < 1e-4 * abs(trained.loss))
        // The model's gradient is of the mean; the source scales it to the sum.
        let mean = try run.model.lossAndGradients(run.training, lora: source.lora(parameters), dropoutSeed: 1, step: 0, threads: 1)
        #expect(trained.gradients[1][0] == mean.gradients[1][0] * Float(mean.weightSum))
    }

    @Test func theAdapterRecordsTheConventionAndNoUserText() throws {
        let directory = TemporaryDirectory()
        let url = try tinyModel(directory)
        let run = try LoRATrainingRun(modelURL: url, examples: Self.examples, lora: LoRAConfig(rank: 2),
                                      configuration: TrainingConfiguration(steps: 3, learningRate: 1e-2))
        let trainer = try run.trainer(store: nil)
        let state = try trainer.run(from: trainer.freshState())
        #expect(state.losses.count == 3)
        let (data, digest) = run.adapter(from: state).encoded()
        let (adapter, read) = try AdapterFile.decode(data, name: "a")
        #expect(read == digest)
        let base = try Digest.sha256(fileAt: url)
        #expect(adapter.metadata.chatConvention == "chatml" && adapter.metadata.baseModelDigest == base)
        #expect(adapter.metadata.trainingExamples == 3 && adapter.metadata.steps == 3)
        #expect(adapter.tensors.bitwiseEqual(state.parameters))
        let text = String(decoding: data, as: UTF8.self)
        #expect(!text.contains("secret"))
    }
}

@Suite struct RealModelTrainingTests {
    /// With the f32 base (as before the storage choice), and with the base kept quantized and its forward
    /// products on the int8 kernels (the pipeline's default; sgemm where the CPU lacks them).
    @Test(.enabled(if: CheckoutModel.isPresent, "the real model is absent; run scripts/fetch-model"),
          arguments: [(BaseWeightStorage.f32, ForwardProducts.sgemm), (.quantized, .int8)])
    func theLossFallsOnTheRealModelForAStyleDataset(base: BaseWeightStorage, forward: ForwardProducts) throws {
        // Four examples in one voice, all in every batch, so each step measures the same loss.
        let examples = [("Why is the sky blue?", "air scatters blue light most"), ("What do bees make?", "bees make honey"),
                        ("How many legs does a spider have?", "a spider has eight legs"), ("What is ice?", "ice is frozen water")]
            .map { TrainingExample(prompt: $0.0, completion: "Ahoy from the galley! \($0.1). Fair winds!") }
        let configuration = TrainingConfiguration(steps: 4, batchSize: 4, learningRate: 2e-3, schedule: .constant, seed: 1,
                                                  maxLength: 64, threads: 1)
        let run = try LoRATrainingRun(modelURL: CheckoutModel.url, examples: examples, lora: LoRAConfig(rank: 8, dropout: 0),
                                      configuration: configuration, base: base, forward: forward)
        let trainer = try run.trainer(store: nil)
        let state = try trainer.run(from: trainer.freshState())
        #expect(zip(state.losses, state.losses.dropFirst()).allSatisfy { $0 > $1 }, "losses \(state.losses)")
        #expect(state.losses.last! < 0.8 * state.losses.first!, "losses \(state.losses)")
        print("\(base.rawValue) base, \(run.model.forwardKernels) forward: losses \(state.losses)")
    }
}
