import Foundation
import Model
import Testing
import TestSupport

/// The tiny random model, written once per test run.
enum Tiny {
    static let directory = TemporaryDirectory("tiny-model")
    static func load(_ configure: (inout TinyModel) -> Void = { _ in }, name: String = "tiny.gguf") -> LlamaModel {
        var tiny = TinyModel(seed: 7)
        configure(&tiny)
        let url = directory.file(name)
        try! tiny.write(to: url)
        return try! LlamaModel(url: url)
    }
    static let model = load()
    static let tokens = [1, 40, 300, 7, 99, 150, 3, 250, 61, 2, 17, 88]
}

func maxAbsDifference(_ a: [Float], _ b: [Float]) -> Float {
    precondition(a.count == b.count)
    return zip(a, b).reduce(0) { max($0, abs($1.0 - $1.1)) }
}

struct LlamaModelTests {
    @Test func readsTheTinyModelsHyperparametersFromItsMetadata() {
        let h = Tiny.model.hyperparameters
        #expect(h.blockCount == 2 && h.width == 64 && h.ffnWidth == 128)
        #expect(h.headCount == 4 && h.kvHeadCount == 2 && h.headDimension == 16 && h.ropeDimensions == 16)
        #expect(h.vocabularySize == TinyModel.vocabulary.tokens.count)
        #expect(h.vocabularySize > 300)
        #expect(Tiny.model.tiedOutput)
    }

    @Test func producesOneRowOfLogitsPerToken() {
        var cache = KVCache()
        let all = Tiny.model.forwardAll(tokens: Tiny.tokens, cache: &cache)
        #expect(all.count == Tiny.tokens.count * Tiny.model.hyperparameters.vocabularySize)
        #expect(cache.count == Tiny.tokens.count)
        #expect(all.allSatisfy { $0.isFinite })
        var fresh = KVCache()
        let last = Tiny.model.forward(tokens: Tiny.tokens, cache: &fresh)
        #expect(last.count == Tiny.model.hyperparameters.vocabularySize)
        #expect(maxAbsDifference(last, Array(all.suffix(last.count))) <= 1e-5)
    }

    /// The fast pass (sgemm, batched attention) against the naive per-position loops: within 1e-5 of the largest logit.
    @Test(arguments: [GGMLType.f32, .q8_0, .q4_1])
    func fastForwardAgreesWithTheNaiveReference(type: GGMLType) {
        let model = type == .f32 ? Tiny.model : Tiny.load({ $0.weightType = type; $0.embeddingType = type; $0.separateOutput = true }, name: "tiny-\(type.name).gguf")
        var cache = KVCache()
        let fast = model.forwardAll(tokens: Tiny.tokens, cache: &cache)
        let naive = model.referenceForward(tokens: Tiny.tokens)
        let largest = naive.map(abs).max()!
        print("fast vs naive (\(type.name)): max |Δ| \(maxAbsDifference(fast, naive)), largest |logit| \(largest)")
        #expect(maxAbsDifference(fast, naive) <= 1e-5 * largest)
    }

    @Test func changingALaterTokenNeverChangesAnEarlierPosition() {
        var tokens = Tiny.tokens
        var c1 = KVCache(), c2 = KVCache()
        let before = Tiny.model.forwardAll(tokens: tokens, cache: &c1)
        tokens[8] = 5
        let after = Tiny.model.forwardAll(tokens: tokens, cache: &c2)
        let V = Tiny.model.hyperparameters.vocabularySize
        #expect(before[0..<(8 * V)] == after[0..<(8 * V)])          // positions 0…7: bit-identical
        #expect(before[(8 * V)..<(9 * V)] != after[(8 * V)..<(9 * V)])
    }

    /// Decoding one token at a time on the cache equals recomputing the whole prefix, within 1e-6 of the largest
    /// logit (sgemm blocks the sums differently for 1 and for T rows, so the last bits differ).
    @Test func kvCacheDecodingEqualsFullRecomputation() {
        let V = Tiny.model.hyperparameters.vocabularySize
        var full = KVCache()
        let all = Tiny.model.forwardAll(tokens: Tiny.tokens, cache: &full)
        var cache = KVCache()
        _ = Tiny.model.forward(tokens: Array(Tiny.tokens[0..<4]), cache: &cache)   // a 4-token prompt
        var worst: Float = 0
        for t in 4..<Tiny.tokens.count {
            let step = Tiny.model.forward(tokens: [Tiny.tokens[t]], cache: &cache)
            worst = max(worst, maxAbsDifference(step, Array(all[(t * V)..<((t + 1) * V)])))
        }
        let largest = all.map(abs).max()!
        print("KV-cache decode vs recompute: max |Δ| \(worst), largest |logit| \(largest)")
        #expect(cache.count == Tiny.tokens.count)
        #expect(worst <= 1e-6 * largest)
    }

    /// The same with single tokens read from Q4_0/Q4_1/Q8_0 blocks instead of the f32 copy: with 8-bit activations
    /// (QuantizedMatVecTests bounds each product), within 5% of the largest logit (measured 2%).
    @Test(arguments: [GGMLType.q4_0, .q4_1, .q8_0])
    func quantizedDecodingEqualsFullRecomputation(type: GGMLType) {
        let model = Tiny.load({ $0.weightType = type; $0.embeddingType = type }, name: "tiny-decode-\(type.name).gguf")
        let V = model.hyperparameters.vocabularySize
        var full = KVCache()
        let all = model.forwardAll(tokens: Tiny.tokens, cache: &full)
        var cache = KVCache()
        _ = model.forward(tokens: Array(Tiny.tokens[0..<4]), cache: &cache)
        var worst: Float = 0
        for t in 4..<Tiny.tokens.count {
            worst = max(worst, maxAbsDifference(model.forward(tokens: [Tiny.tokens[t]], cache: &cache), Array(all[(t * V)..<((t + 1) * V)])))
        }
        #expect(worst <= 0.05 * all.map(abs).max()!)
    }

    @Test func decodingResumesFromAnyPrefixOfTheCache() {
        let V = Tiny.model.hyperparameters.vocabularySize
        var cache = KVCache()
        _ = Tiny.model.forward(tokens: Tiny.tokens, cache: &cache)
        cache.truncate(to: 5)
        let branch = Tiny.model.forwardAll(tokens: [9, 10, 11], cache: &cache)
        var fresh = KVCache()
        let recomputed = Tiny.model.forwardAll(tokens: Array(Tiny.tokens[0..<5]) + [9, 10, 11], cache: &fresh)
        #expect(maxAbsDifference(branch, Array(recomputed.suffix(3 * V))) <= 1e-6 * recomputed.map(abs).max()!)
        #expect(cache.count == 8)
    }

    @Test func aSeparateOutputMatrixIsUsedWhenPresent() {
        let separate = Tiny.load({ $0.separateOutput = true }, name: "tiny-separate.gguf")
        #expect(!separate.tiedOutput)
        var c1 = KVCache(), c2 = KVCache()
        #expect(separate.forward(tokens: Tiny.tokens, cache: &c1) != Tiny.model.forward(tokens: Tiny.tokens, cache: &c2))
    }

    @Test func theSameSeedWritesTheSameFileAndAnotherSeedDoesNot() {
        #expect(TinyModel(seed: 3).writer().data() == TinyModel(seed: 3).writer().data())
        #expect(TinyModel(seed: 3).writer().data() != TinyModel(seed: 4).writer().data())
    }

    @Test func aModelMissingATensorIsATypedError() throws {
        var w = TinyModel(seed: 1).writer()
        let dir = TemporaryDirectory()
        var broken = GGUFWriter()
        for (k, v) in w.metadata { broken.set(k, v) }
        for t in w.tensors where t.name != "blk.1.ffn_up.weight" { broken.addRawTensor(t.name, dimensions: t.dimensions, type: t.type, data: t.data) }
        w = broken
        try w.write(to: dir.file("broken.gguf"))
        #expect(throws: ModelError.missingTensor(name: "blk.1.ffn_up.weight")) { _ = try LlamaModel(url: dir.file("broken.gguf")) }
    }
}
