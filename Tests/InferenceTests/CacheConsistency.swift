import Inference

/// Greedy decoding the slow, obvious way: every step empties the cache and runs the whole sequence again.
/// The oracle for "decoding with the key/value cache equals full recomputation".
func greedyByFullRecomputation<B: LanguageModelBackend>(_ backend: B, prompt: [Int32], maxTokens: Int,
                                                        endTokens: Set<Int32>) throws -> [Int32] {
    var sequence = prompt
    var generated: [Int32] = []
    while generated.count < maxTokens {
        backend.truncateCache(to: 0)
        let logits = try backend.evaluate(sequence, adapter: nil)
        let token = Sampler.argmax(logits)
        if endTokens.contains(token) { break }
        generated.append(token)
        sequence.append(token)
    }
    backend.truncateCache(to: 0)
    return generated
}
