import AdaptCore
import Foundation
import Model
import Testing

/// phi3's one LoRA pair on each fused tensor (`qkv` on attn_qkv, `gate_up` on ffn_up), as PEFT, mlx-lm and
/// llama.cpp put it on Phi-3's qkv_proj and gate_up_proj, on the tiny phi3 model of `ArchitectureTests`.
struct FusedLoRATests {
    static let trainingTargets: [Projection] = [.q, .k, .v, .o, .gate, .up, .down]

    /// The adapter training gives phi3 for every projection, with random non-zero B.
    static func fusedAdapter(_ model: LlamaModel, dropout: Float) throws -> LoRAParameters {
        let config = try LoRAConfig(rank: 4, alpha: 8, dropout: dropout, targets: trainingTargets).resolved(for: model.hyperparameters.architecture)
        var lora = LoRAParameters.initialized(for: model, config: config, seed: 11)
        let rng = CounterRNG(seed: 11)
        for i in lora.names.indices where lora.names[i].hasSuffix("lora_b") {
            lora.values[i] = lora.values[i].indices.map { Float(rng.normal(.test, step: UInt64(i), index: UInt32($0))) * 0.2 }
        }
        return lora
    }

    static let batch = [
        TrainingSequence(tokens: [1, 40, 300, 7, 99, 150, 3, 250, 61, 2], weights: [0, 0, 0, 1, 1, 1, 1, 0.5, 1]),
        TrainingSequence(tokens: [1, 17, 88, 120, 5, 260], weights: [0, 0, 2, 1, 1]),
    ]

    /// Any part of a fused tensor names its one pair on phi3 (PEFT cannot adapt q without k either); other
    /// architectures keep their targets and refuse a fused one, naming the way out.
    @Test func phi3TrainsOnePairPerFusedTensorAndOtherArchitecturesKeepTheirs() throws {
        let phi3 = try Architecture.named("phi3"), llama = try Architecture.named("llama")
        #expect(try LoRAConfig(targets: [.q, .k, .v, .o]).resolved(for: phi3).targets == [.qkv, .o])
        #expect(try LoRAConfig(targets: Self.trainingTargets).resolved(for: phi3).targets == [.qkv, .o, .gateUp, .down])
        #expect(try LoRAConfig(targets: [.q, .v, .o, .down]).resolved(for: phi3).targets == [.qkv, .o, .down])
        #expect(try LoRAConfig(targets: [.o, .up, .qkv, .k]).resolved(for: phi3).targets == [.o, .gateUp, .qkv])
        #expect(try LoRAConfig(targets: Self.trainingTargets).resolved(for: llama).targets == Self.trainingTargets)
        for (targets, words) in [([Projection.qkv, .o], "target q,k,v instead"), ([.down, .gateUp], "target gate,up instead")] {
            let error = #expect(throws: ModelError.self) { try LoRAConfig(targets: targets).resolved(for: llama) }
            #expect(error.map { "\($0)".contains(words) && "\($0)".contains("llama") } == true, "\(String(describing: error))")
        }
    }

    /// The fused pair's shapes are the fused tensors': A (r, C), B (Cq + 2·Ckv, r) and (2F, r).
    @Test func aFusedPairSpansTheWholeFusedTensor() throws {
        let (model, _) = try ArchitectureTests.model("phi3")
        let h = model.hyperparameters
        let lora = try Self.fusedAdapter(model, dropout: 0)
        let shape = Dictionary(uniqueKeysWithValues: zip(lora.names, lora.shapes))
        #expect(shape["blk.0.qkv.lora_a"] == [4, h.width] && shape["blk.0.qkv.lora_b"] == [h.queryWidth + 2 * h.keyValueWidth, 4])
        #expect(shape["blk.1.gate_up.lora_a"] == [4, h.width] && shape["blk.1.gate_up.lora_b"] == [2 * h.ffnWidth, 4])
        #expect(!lora.names.contains { $0.contains(".q.") || $0.contains(".gate.") || $0.contains(".up.") })
    }

    /// One pair on a fused tensor is separate pairs on its parts that share A, B cut in row ranges: the same
    /// logits, dA the sum of the parts' dA and dB their dB stacked (no dropout: the masks differ otherwise).
    /// The batched pass also equals the slow float64 reference with the fused pairs.
    @Test func aFusedPairEqualsSeparatePairsSharingAAndTheReference() throws {
        let (model, _) = try ArchitectureTests.model("phi3")
        let h = model.hyperparameters
        let fused = try Self.fusedAdapter(model, dropout: 0)
        let value = Dictionary(uniqueKeysWithValues: zip(fused.names, fused.values))
        var names: [String] = [], shapes: [[Int]] = [], values: [[Float]] = []
        for block in 0..<h.blockCount {
            for target in fused.config.targets {
                let a = value["blk.\(block).\(target.rawValue).lora_a"]!, b = value["blk.\(block).\(target.rawValue).lora_b"]!
                var row = 0
                for member in target.members.isEmpty ? [target] : target.members {
                    let (out, inp) = h.shape(of: member)
                    names += ["blk.\(block).\(member.rawValue).lora_a", "blk.\(block).\(member.rawValue).lora_b"]
                    shapes += [[4, inp], [out, 4]]
                    values += [a, Array(b[(row * 4)..<((row + out) * 4)])]
                    row += out
                }
            }
        }
        var config = fused.config
        config.targets = Self.trainingTargets
        let separate = LoRAParameters(config: config, names: names, shapes: shapes, values: values)

        let tokens = [1, 40, 300, 7, 99]
        var c1 = KVCache(), c2 = KVCache()
        let viaFused = model.forwardAll(tokens: tokens, lora: fused, cache: &c1)
        let viaSeparate = model.forwardAll(tokens: tokens, lora: separate, cache: &c2)
        let reference = model.referenceForward(tokens: tokens, lora: fused)
        let scale = reference.map(abs).max()!
        #expect(maxAbsDifference(viaFused, reference) <= 1e-5 * scale)
        #expect(maxAbsDifference(viaFused, viaSeparate) <= 1e-5 * scale)
        var base = KVCache()
        #expect(maxAbsDifference(model.forwardAll(tokens: tokens, cache: &base), viaFused) > 1e-2 * scale, "the adapter moves the logits")

        let gf = try model.lossAndGradients(Self.batch, lora: fused, dropoutSeed: 3, step: 9, threads: 1)
        let gs = try model.lossAndGradients(Self.batch, lora: separate, dropoutSeed: 3, step: 9, threads: 1)
        #expect(abs(gf.loss - gs.loss) <= 1e-5 * abs(gf.loss))
        let fusedGradient = Dictionary(uniqueKeysWithValues: zip(fused.names, gf.gradients))
        let separateGradient = Dictionary(uniqueKeysWithValues: zip(separate.names, gs.gradients))
        for block in 0..<h.blockCount {
            for target in [Projection.qkv, .gateUp] {
                let parts = target.members.map { "blk.\(block).\($0.rawValue)" }
                let dA = fusedGradient["blk.\(block).\(target.rawValue).lora_a"]!
                let summed = dA.indices.map { i in parts.reduce(Float(0)) { $0 + separateGradient[$1 + ".lora_a"]![i] } }
                let dB = fusedGradient["blk.\(block).\(target.rawValue).lora_b"]!
                let stacked = parts.flatMap { separateGradient[$0 + ".lora_b"]! }
                let size = max(dA.map(abs).max()!, dB.map(abs).max()!)
                #expect(maxAbsDifference(dA, summed) <= 1e-4 * size, "block \(block) \(target) dA")
                #expect(maxAbsDifference(dB, stacked) <= 1e-4 * size, "block \(block) \(target) dB")
            }
        }
    }

    /// The fused pairs' gradients along random directions, tensor by tensor, against Richardson-extrapolated
    /// central differences of the f32 loss (as `ArchitectureTests` checks every projection), with and without
    /// dropout.
    @Test(arguments: [Float(0), 0.2])
    func fusedPairGradientsAgreeWithFiniteDifferences(dropout: Float) throws {
        let (model, _) = try ArchitectureTests.model("phi3")
        let lora = try Self.fusedAdapter(model, dropout: dropout)
        let rng = CounterRNG(seed: 12)
        let fused = lora.names.indices.filter { lora.names[$0].contains("qkv") || lora.names[$0].contains("gate_up") }
        var worst = 0.0
        for check in try ArchitectureTests.directionalDerivatives(model, lora: lora, batch: Self.batch, rng: rng, tensors: fused) {
            worst = max(worst, abs(check.numeric - check.exact) / max(abs(check.exact), 1e-1))
            #expect(abs(check.exact) > 1e-3, "\(check.name) has a gradient to check")
            #expect(abs(check.numeric - check.exact) <= 5e-3 * abs(check.exact) + 5e-4, "\(check.name): analytic \(check.exact), numeric \(check.numeric)")
        }
        print("phi3 fused pairs gradient check (dropout \(dropout)): worst relative error \(worst)")
    }
}
