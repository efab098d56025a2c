import AdaptCore
import Foundation
import Registry
import Storage
import Testing
import TestSupport

@Test(arguments: Backend.allCases)
func cachedScoresAreFoundOnlyForTheSameModelWeightsAndExample(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    let cache = try ScoreCache(connection: f.connection, clock: f.clock)
    let model = Digest.sha256("model"), other = Digest.sha256("other model")
    let adapter = ScoreCache.Weights.adapter(Digest.sha256("adapter"))
    let examples = (0..<5).map { Digest.sha256("example \($0)") }
    try cache.store(model: model, weights: .base, entries: examples.prefix(3).map { .init(example: $0, meanNLL: 2.5, tokens: 12) })
    #expect(try cache.lookup(model: model, weights: .base, examples: examples).keys.sorted() == Array(examples.prefix(3)).sorted())
    #expect(try cache.lookup(model: model, weights: adapter, examples: examples).isEmpty)
    #expect(try cache.lookup(model: other, weights: .base, examples: examples).isEmpty)
    // A second store of the same key keeps the first value (scoring is deterministic).
    try cache.store(model: model, weights: .base, entries: [.init(example: examples[0], meanNLL: 9, tokens: 1)])
    #expect(try cache.lookup(model: model, weights: .base, examples: [examples[0]])[examples[0]]?.meanNLL == 2.5)
    #expect(try cache.remove(model: model, weights: .base) == 3)
    #expect(try cache.lookup(model: model, weights: .base, examples: examples).isEmpty)
}
