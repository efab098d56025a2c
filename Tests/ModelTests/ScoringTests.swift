import Foundation
import Model
import Testing

struct ScoringTests {
    @Test func completionLogProbabilitiesAreTheLogSoftmaxOfTheFullPass() {
        let prompt = [1, 40, 300, 7], completion = [99, 150, 3]
        let lp = Tiny.model.logProbabilities(of: completion, after: prompt)
        var cache = KVCache()
        let all = Tiny.model.forwardAll(tokens: prompt + completion, cache: &cache)
        let V = Tiny.model.hyperparameters.vocabularySize
        #expect(lp.count == 3)
        for (i, token) in completion.enumerated() {
            let row = all[((prompt.count + i - 1) * V)..<((prompt.count + i) * V)].map(Double.init)
            let m = row.max()!
            let expected = row[token] - m - log(row.reduce(0) { $0 + exp($1 - m) })
            #expect(abs(lp[i] - expected) <= 1e-5)
            #expect(lp[i] < 0)
        }
        #expect(Tiny.model.logProbabilities(of: completion, after: []).count == 2)
        #expect(Tiny.model.logProbabilities(of: [], after: prompt).isEmpty)
    }

    @Test func topOrdersByLogitThenId() {
        let top = LlamaModel.top(3, of: [0.5, 2, -1, 2, 1])
        #expect(top.map(\.id) == [1, 3, 4])
    }
}

@Test func topAgreesWithAFullSortForSmallAndLargeK() {
    let logits = (0..<500).map { Float(($0 * 7919) % 101) * 0.5 }
    let sorted = logits.indices.sorted { logits[$0] > logits[$1] || (logits[$0] == logits[$1] && $0 < $1) }
    for k in [1, 5, 64, 65, 500, 600] {
        #expect(LlamaModel.top(k, of: logits).map(\.id) == Array(sorted.prefix(k)))
    }
}

@Test func heldOutLossEqualsTheTrainingLossWithoutDropout() throws {
    let lora = LoRATests.adapter(dropout: 0)
    let training = try Tiny.model.lossAndGradients(LoRATests.batch, lora: lora, dropoutSeed: 0, step: 0)
    let heldOut = Tiny.model.loss(LoRATests.batch, lora: lora)
    #expect(heldOut.weightSum == training.weightSum)
    #expect(abs(heldOut.loss - training.loss) <= 1e-5)
    // A two-token sequence is a single-token pass: still the f32 path.
    let short = [TrainingSequence(tokens: [5, 9], weights: [1])]
    let trained = try Tiny.model.lossAndGradients(short, lora: lora, dropoutSeed: 0, step: 0)
    #expect(abs(Tiny.model.loss(short, lora: lora).loss - trained.loss) <= 1e-5)
}
