import Foundation
import Model
import Testing
import TestSupport

/// A model file whose projections are stored in each type added beside the first six loads through the
/// ordinary path (dequantized once at load) and runs as the same model stored in F32 with the values
/// `Dequantize` gives; single-token decoding reads the blocks through `QuantizedMatVec`.
struct QuantizedModelLoadingTests {
    /// Byte offsets of each type's f16 scale fields: random bytes elsewhere are valid blocks, but a random scale
    /// can be 65504 or NaN, which would make the model's activations overflow.
    static let scaleFields: [GGMLType: [Int]] = [
        .q5_0: [0], .q5_1: [0, 2], .iq4_nl: [0], .q2_K: [80, 82], .q3_K: [108], .q4_K: [0, 2], .q5_K: [0, 2],
        .q6_K: [208], .iq4_xs: [0],
    ]

    /// Random blocks with small scales, from a fixed xorshift stream.
    static func randomBlocks(_ type: GGMLType, elements: Int, seed: UInt64) -> [UInt8] {
        var state = seed | 1
        func next() -> UInt64 {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return state
        }
        let blocks = elements / type.blockSize
        var bytes = (0..<(blocks * type.blockBytes)).map { _ in UInt8(truncatingIfNeeded: next()) }
        for b in 0..<blocks {
            for offset in scaleFields[type]! {
                let scale = Float16(Float(next() % 1000 + 1) * 2e-6 * (next() % 2 == 0 ? 1 : -1))
                let bits = scale.bitPattern
                bytes[b * type.blockBytes + offset] = UInt8(bits & 0xFF)
                bytes[b * type.blockBytes + offset + 1] = UInt8(bits >> 8)
            }
        }
        return bytes
    }

    @Test(arguments: [GGMLType.q5_0, .q5_1, .iq4_nl, .q2_K, .q3_K, .q4_K, .q5_K, .q6_K, .iq4_xs])
    func aModelStoredInTheTypeRunsAsItsDequantizedValues(type: GGMLType) throws {
        let dir = TemporaryDirectory()
        var tiny = TinyModel(seed: 11)
        (tiny.width, tiny.ffnWidth, tiny.headCount, tiny.kvHeadCount, tiny.blockCount) = (256, 256, 4, 2, 1)
        let source = tiny.writer()
        var quantized = GGUFWriter(), reference = GGUFWriter()
        for (key, value) in source.metadata {
            quantized.set(key, value)
            reference.set(key, value)
        }
        for (index, tensor) in source.tensors.enumerated() {
            guard tensor.name.hasPrefix("blk."), tensor.dimensions.count == 2 else {
                quantized.addRawTensor(tensor.name, dimensions: tensor.dimensions, type: tensor.type, data: tensor.data)
                reference.addRawTensor(tensor.name, dimensions: tensor.dimensions, type: tensor.type, data: tensor.data)
                continue
            }
            let count = tensor.dimensions.reduce(1, *)
            let blocks = Self.randomBlocks(type, elements: count, seed: UInt64(index + 1) * 0x9E37_79B9)
            quantized.addRawTensor(tensor.name, dimensions: tensor.dimensions, type: type.rawValue, data: blocks)
            let values = blocks.withUnsafeBytes { Dequantize.toFloat($0, type: type, count: count) }
            reference.addTensor(tensor.name, dimensions: tensor.dimensions, values: values, as: .f32)
        }
        let quantizedURL = dir.file("q.gguf"), referenceURL = dir.file("f32.gguf")
        try quantized.write(to: quantizedURL)
        try reference.write(to: referenceURL)

        try LlamaModel.validateStructure(of: GGUFFile(url: quantizedURL))
        let model = try LlamaModel(url: quantizedURL)
        let expected = try LlamaModel(url: referenceURL)
        #expect(model.weightBytes == expected.weightBytes)
        let prompt = [5, 40, 77, 3, 120]
        var cache = KVCache(), referenceCache = KVCache()
        let logits = model.forwardAll(tokens: prompt, cache: &cache)
        let referenceLogits = expected.forwardAll(tokens: prompt, cache: &referenceCache)
        #expect(logits == referenceLogits, "\(type.name): same weights, same passes")
        try LlamaModel.requireFinite(logits)
        // One decoded token from the f32 copy is the same model; from the blocks (`QuantizedMatVec`, which
        // rounds the activations to 8 bits, within the bound QuantizedMatVecTests proves per product) it is
        // close: within 2% of the logits' spread on this tiny model, whose logits span a few units.
        var f32Cache = cache
        let next = model.forward(tokens: [9], cache: &cache)
        let referenceNext = expected.forward(tokens: [9], cache: &referenceCache)
        let f32Model = try LlamaModel(url: quantizedURL, quantizedDecode: false)
        #expect(f32Model.forward(tokens: [9], cache: &f32Cache) == referenceNext)
        let spread = referenceNext.max()! - referenceNext.min()!
        let worst = zip(next, referenceNext).map { abs($0 - $1) }.max()!
        #expect(worst <= 0.02 * spread, "\(type.name): decoded logits differ by \(worst), spread \(spread)")
    }
}
