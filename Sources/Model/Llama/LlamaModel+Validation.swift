import Foundation

extension LlamaModel {
    /// Checks that `file` can be loaded as a model without dequantizing a weight: the header, metadata and
    /// tensor table parse and every tensor's data lies inside the file (`GGUFFile`), the architecture and its
    /// hyperparameters are supported, every tensor the model reads is present with its shape and a type this
    /// reader dequantizes, and the tokenizer can be built. Cheap enough for `enqueue nightly` (the file is
    /// mapped, not read), so a truncated or corrupt model is refused there instead of failing every training
    /// attempt hours later. Throws the `ModelError` that loading would.
    public static func validateStructure(of file: GGUFFile) throws {
        let h = try Hyperparameters(file: file)
        let (C, F, V) = (h.width, h.ffnWidth, h.vocabularySize)
        func check(_ name: String, _ dimensions: [Int]) throws {
            guard let info = file.tensor(named: name) else { throw ModelError.missingTensor(name: name) }
            guard info.dimensions == dimensions else {
                throw ModelError.tensorShapeMismatch(name: name, expected: dimensions, actual: info.dimensions)
            }
            guard info.offset >= 0, info.offset + info.byteCount <= file.fileSize else { throw ModelError.tensorOutOfBounds(name: name) }
        }
        try check("token_embd.weight", [C, V])
        try check("output_norm.weight", [C])
        if file.tensor(named: "output.weight") != nil { try check("output.weight", [C, V]) }
        // Checked block by block, not listed first: a damaged block_count (found by fuzzing: a billion blocks in a
        // 58 KB file) then fails at its first missing tensor instead of allocating the names of every block.
        for i in 0..<h.blockCount {
            var expected: [(String, [Int])] = [
                ("blk.\(i).attn_norm.weight", [C]), ("blk.\(i).attn_output.weight", [h.queryWidth, C]),
                ("blk.\(i).ffn_norm.weight", [C]), ("blk.\(i).ffn_down.weight", [F, C]),
            ]
            if h.architecture.fusedProjections, file.tensor(named: "blk.\(i).attn_qkv.weight") != nil {
                expected.append(("blk.\(i).attn_qkv.weight", [C, h.queryWidth + 2 * h.keyValueWidth]))
            } else {
                expected += [("blk.\(i).attn_q.weight", [C, h.queryWidth]), ("blk.\(i).attn_k.weight", [C, h.keyValueWidth]),
                             ("blk.\(i).attn_v.weight", [C, h.keyValueWidth])]
            }
            if h.architecture.fusedProjections {
                expected.append(("blk.\(i).ffn_up.weight", [C, 2 * F]))
            } else {
                expected += [("blk.\(i).ffn_gate.weight", [C, F]), ("blk.\(i).ffn_up.weight", [C, F])]
            }
            if h.architecture.projectionBiases {
                expected += [("blk.\(i).attn_q.bias", [h.queryWidth]), ("blk.\(i).attn_k.bias", [h.keyValueWidth]),
                             ("blk.\(i).attn_v.bias", [h.keyValueWidth])]
            }
            if h.architecture.queryKeyNorm {
                expected += [("blk.\(i).attn_q_norm.weight", [h.headDimension]), ("blk.\(i).attn_k_norm.weight", [h.headDimension])]
            }
            if h.architecture.postNorms {
                expected += [("blk.\(i).post_attention_norm.weight", [C]), ("blk.\(i).post_ffw_norm.weight", [C])]
            }
            for (name, dimensions) in expected { try check(name, dimensions) }
        }
        _ = try Tokenizer(gguf: file)
    }
}
