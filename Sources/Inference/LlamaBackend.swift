import Model

/// `LlamaModel` with the one key/value cache a session owns.
///
/// The model itself is immutable and shared; the cache is this backend's only state. LoRA is applied inside
/// the forward pass (y = W·x + (α/r)·B·A·x), so attaching or swapping an adapter touches no base weight.
public final class LlamaBackend: LanguageModelBackend {
    public typealias Adapter = LoRAParameters

    public let model: LlamaModel
    private var cache = KVCache()

    public init(model: LlamaModel) { self.model = model }

    public var vocabularySize: Int { model.hyperparameters.vocabularySize }
    public var contextLength: Int { model.hyperparameters.contextLength }
    public var cachedTokenCount: Int { cache.count }

    /// Bytes the cache holds now.
    public var cacheBytes: Int { cache.byteCount }

    public func truncateCache(to count: Int) {
        if count == 0 { cache.removeAll() } else if count < cache.count { cache.truncate(to: count) }
    }

    public func evaluate(_ tokens: [Int32], adapter: LoRAParameters?) throws -> [Float] {
        let ids = tokens.map(Int.init)
        try model.validate(tokens: ids)
        guard cache.count + ids.count <= contextLength else {
            throw InferenceError.promptTooLong(tokens: cache.count + ids.count, contextLength: contextLength)
        }
        let logits = model.forward(tokens: ids, lora: adapter, cache: &cache, quantizedPrompt: true)
        try LlamaModel.requireFinite(logits)
        return logits
    }

    /// Every tensor the adapter's config promises must be there with the shape this model needs, and nothing
    /// else: the forward pass treats a misfit as a programmer error, so it is caught here, as a value.
    public func validate(_ adapter: LoRAParameters, name: String) throws {
        let h = model.hyperparameters
        let rank = adapter.config.rank
        guard rank > 0 else { throw InferenceError.adapterShapeMismatch(adapter: name, reason: "its rank is \(rank)") }
        guard adapter.names.count == adapter.shapes.count, adapter.names.count == adapter.values.count else {
            throw InferenceError.adapterShapeMismatch(adapter: name, reason: "it lists \(adapter.names.count) names, "
                + "\(adapter.shapes.count) shapes and \(adapter.values.count) tensors")
        }
        var expected: [String: [Int]] = [:]
        for block in 0..<h.blockCount {
            for projection in adapter.config.targets {
                let (output, input) = h.shape(of: projection)
                expected[LoRAParameters.name(block: block, projection, "a")] = [rank, input]
                expected[LoRAParameters.name(block: block, projection, "b")] = [output, rank]
            }
        }
        guard adapter.names.count == expected.count else {
            throw InferenceError.adapterShapeMismatch(adapter: name, reason: "it has \(adapter.names.count) tensors, "
                + "this model needs \(expected.count) for \(h.blockCount) blocks and rank \(rank)")
        }
        for (i, tensor) in adapter.names.enumerated() {
            guard let shape = expected[tensor] else {
                throw InferenceError.adapterShapeMismatch(adapter: name, reason: "tensor \(tensor) belongs to no block of this model")
            }
            guard adapter.shapes[i] == shape, adapter.values[i].count == shape.reduce(1, *) else {
                throw InferenceError.adapterShapeMismatch(adapter: name, reason: "tensor \(tensor) has shape \(adapter.shapes[i]), "
                    + "this model needs \(shape)")
            }
        }
    }
}
