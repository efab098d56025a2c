import AdaptCore
import Foundation
import Model
import Testing
import TestSupport

/// Every supported architecture through the one forward and backward pass, on the tiny model of each variant
/// (`TinyModel(seed:variant:)`), against the independent numpy reference and llama.cpp's arg-max
/// (scripts/fixtures/architecture_reference.py), the slow Swift reference, the KV cache and finite differences.
struct ArchitectureTests {
    struct Fixture: Decodable {
        struct Entry: Decodable { let id: Int; let logit: Double }
        struct Position: Decodable {
            let position: Int
            let top: [Entry]
            let llama_cpp_top1: Int
            let llama_cpp_margin: Double
        }
        struct Sequence: Decodable { let tokens: [Int]; let positions: [Position] }
        struct Variant: Decodable { let variant: String; let sha256: String; let sequences: [Sequence] }
        let seed: UInt64
        let variants: [Variant]
    }

    static let fixture: Fixture = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/architecture_reference.json")
        return try! JSONDecoder().decode(Fixture.self, from: Data(contentsOf: url))
    }()

    static let folder = TemporaryDirectory("architectures")

    /// The variant's tiny model as the fixture script wrote it, and its file.
    static func model(_ variant: String, seed: UInt64 = fixture.seed) throws -> (LlamaModel, URL) {
        let url = folder.file("\(variant)-\(seed).gguf")
        if !FileManager.default.fileExists(atPath: url.path) { try TinyModel(seed: seed, variant: variant).write(to: url) }
        return (try LlamaModel(url: url), url)
    }

    /// All of the reference's top-10 logits at every position of three sequences (1, 9 and 48 tokens), within
    /// 1e-4 absolute of the float64 numpy pass written from HF's modelling files; and at every position the
    /// arg-max is llama.cpp's on the same file (the file's SHA-256 is the one the peer read).
    @Test(arguments: TinyModel.variants)
    func logitsAgreeWithTheNumpyReferenceAndTopTokensWithLlamaCpp(variant: String) throws {
        let entry = try #require(Self.fixture.variants.first { $0.variant == variant })
        let (model, url) = try Self.model(variant)
        #expect(try Digest.sha256(fileAt: url).hex == entry.sha256, "the tiny \(variant) file changed; rerun the fixture script")
        let V = model.hyperparameters.vocabularySize
        var worst = 0.0
        for sequence in entry.sequences {
            var cache = KVCache()
            let logits = model.forwardAll(tokens: sequence.tokens, cache: &cache)
            for position in sequence.positions {
                let row = Array(logits[(position.position * V)..<((position.position + 1) * V)])
                for e in position.top { worst = max(worst, abs(Double(row[e.id]) - e.logit)) }
                let argmax = row.indices.max { row[$0] < row[$1] }!
                #expect(argmax == position.top[0].id, "\(variant) position \(position.position): numpy's arg-max")
                #expect(argmax == position.llama_cpp_top1, "\(variant) position \(position.position): llama.cpp's arg-max")
            }
        }
        print("\(variant): max |logit − numpy| = \(worst)")
        #expect(worst <= 1e-4)
    }

    /// The batched pass, the slow Swift reference, and token-by-token decoding through the KV cache agree: on
    /// f32 weights and on Q8_0 weights decoded in f32 within 1e-4; on Q8_0 read with 8-bit activations (the
    /// default decode) within 5% of the largest logit, the bound LlamaModelTests gives that rounding.
    @Test(arguments: TinyModel.variants)
    func batchedReferenceAndCachedDecodingAgree(variant: String) throws {
        let (model, _) = try Self.model(variant)
        let tokens = [5, 77, 140, 9, 300, 41, 41, 260, 12]
        var cache = KVCache()
        let batched = model.forwardAll(tokens: tokens, cache: &cache)
        let reference = model.referenceForward(tokens: tokens)
        #expect(maxAbsDifference(batched, reference) <= 1e-5 * reference.map(abs).max()!)
        var quantized = TinyModel(seed: 3, variant: variant)
        quantized.weightType = .q8_0
        let url = Self.folder.file("\(variant)-q8.gguf")
        try quantized.write(to: url)
        for (decoder, eightBit) in [(model, false), (try LlamaModel(url: url, quantizedDecode: false), false),
                                    (try LlamaModel(url: url), true)] {
            var full = KVCache(), stepwise = KVCache()
            let all = decoder.forwardAll(tokens: tokens, cache: &full)
            let V = decoder.hyperparameters.vocabularySize
            let bound = eightBit ? 0.05 * all.map(abs).max()! : 1e-4
            for (t, token) in tokens.enumerated() {
                let row = decoder.forward(tokens: [token], cache: &stepwise)
                #expect(maxAbsDifference(row, Array(all[(t * V)..<((t + 1) * V)])) <= bound, "\(variant) position \(t)")
            }
            #expect(stepwise.count == tokens.count)
        }
    }

    /// LoRA on every projection (random non-zero B; phi3's fused pairs): the loss's directional derivatives along random directions,
    /// tensor by tensor, against finite differences of the f32 loss, within 0.5% + 5e-4, with and without
    /// dropout; the adapted batched pass also agrees with the slow reference. The difference quotient is
    /// Richardson's (4·D(h/2) − D(h))/3 of central differences at h = 4e-3, which cancels the h² term: on
    /// gemma3 (six blocks, √C-scaled embeddings) a plain central difference at 1e-3 was off by up to 7.7e-4
    /// from f32 noise and at 4e-3 by up to 1e-2 from curvature.
    @Test(arguments: TinyModel.variants, [Float(0), 0.2])
    func loraGradientsAgreeWithFiniteDifferences(variant: String, dropout: Float) throws {
        let (model, _) = try Self.model(variant)
        // Every projection as training targets it: phi3's through one pair on each fused tensor.
        let config = try LoRAConfig(rank: 4, alpha: 8, dropout: dropout, targets: Projection.allCases.filter(\.members.isEmpty))
            .resolved(for: model.hyperparameters.architecture)
        var lora = LoRAParameters.initialized(for: model, config: config, seed: 11)
        let rng = CounterRNG(seed: 11)
        for i in lora.names.indices where lora.names[i].hasSuffix("lora_b") {
            lora.values[i] = lora.values[i].indices.map { Float(rng.normal(.test, step: UInt64(i), index: UInt32($0))) * 0.2 }
        }
        if dropout == 0 {
            var cache = KVCache()
            let tokens = [1, 40, 300, 7, 99]
            let reference = model.referenceForward(tokens: tokens, lora: lora)
            #expect(maxAbsDifference(model.forwardAll(tokens: tokens, lora: lora, cache: &cache), reference) <= 1e-5 * reference.map(abs).max()!)
        }
        let batch = [
            TrainingSequence(tokens: [1, 40, 300, 7, 99, 150, 3, 250, 61, 2], weights: [0, 0, 0, 1, 1, 1, 1, 0.5, 1]),
            TrainingSequence(tokens: [1, 17, 88, 120, 5, 260], weights: [0, 0, 2, 1, 1]),
        ]
        var worst = 0.0
        for check in try Self.directionalDerivatives(model, lora: lora, batch: batch, rng: rng, tensors: lora.names.indices) {
            worst = max(worst, abs(check.numeric - check.exact) / max(abs(check.exact), 1e-1))
            #expect(abs(check.numeric - check.exact) <= 5e-3 * abs(check.exact) + 5e-4, "\(variant) \(check.name): analytic \(check.exact), numeric \(check.numeric)")
        }
        print("\(variant) gradient check (dropout \(dropout)): worst relative error \(worst)")
    }

    /// For each of `tensors`, the loss's derivative along a random direction two ways: from the analytic gradient
    /// (`exact`) and from Richardson-extrapolated central differences of the f32 loss at h = 4e-3 (`numeric`).
    static func directionalDerivatives(_ model: LlamaModel, lora: LoRAParameters, batch: [TrainingSequence], rng: CounterRNG,
                                       tensors: some Sequence<Int>) throws -> [(name: String, exact: Double, numeric: Double)] {
        let analytic = try model.lossAndGradients(batch, lora: lora, dropoutSeed: 3, step: 9, threads: 1).gradients
        return try tensors.map { tensor in
            let direction = lora.values[tensor].indices.map { Float(rng.normal(.test, step: 1000 + UInt64(tensor), index: UInt32($0))) }
            func central(_ epsilon: Float) throws -> Double {
                var plus = lora, minus = lora
                for i in direction.indices {
                    plus.values[tensor][i] += epsilon * direction[i]
                    minus.values[tensor][i] -= epsilon * direction[i]
                }
                let lPlus = try model.lossAndGradients(batch, lora: plus, dropoutSeed: 3, step: 9, threads: 1).loss
                let lMinus = try model.lossAndGradients(batch, lora: minus, dropoutSeed: 3, step: 9, threads: 1).loss
                return (lPlus - lMinus) / (2 * Double(epsilon))
            }
            let numeric = (4 * (try central(2e-3)) - (try central(4e-3))) / 3
            let exact = zip(analytic[tensor], direction).reduce(0.0) { $0 + Double($1.0) * Double($1.1) }
            return (lora.names[tensor], exact, numeric)
        }
    }

    /// A file whose family needs a tensor it lacks (a qwen2 file without its q bias) is refused naming it.
    @Test func aFamilyTensorThatIsMissingIsNamed() throws {
        let writer = TinyModel(seed: 1, variant: "qwen2").writer()
        var edited = GGUFWriter()
        for (key, value) in writer.metadata { edited.set(key, value) }
        for tensor in writer.tensors where tensor.name != "blk.1.attn_q.bias" {
            edited.addRawTensor(tensor.name, dimensions: tensor.dimensions, type: tensor.type, data: tensor.data)
        }
        let url = Self.folder.file("qwen2-without-bias.gguf")
        try edited.write(to: url)
        #expect(throws: ModelError.missingTensor(name: "blk.1.attn_q.bias")) { try LlamaModel(url: url) }
        #expect(throws: ModelError.missingTensor(name: "blk.1.attn_q.bias")) { try LlamaModel.validateStructure(of: GGUFFile(url: url)) }
    }

    /// An architecture outside the list is refused naming it and every supported one.
    @Test func anUnsupportedArchitectureIsRefusedWithTheSupportedList() throws {
        #expect(throws: ModelError.unsupportedArchitecture("gpt2")) { try Architecture.named("gpt2") }
        let message = ModelError.unsupportedArchitecture("gpt2").description
        for name in ["gpt2"] + Architecture.supportedNames { #expect(message.contains(name), "\(message)") }
    }
}
