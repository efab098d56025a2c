/// B's rows between the base GGUF's order and Hugging Face's (only q and k of a permuting architecture move).
enum HuggingFaceRows {
    static func heads(_ projection: String, base: BaseModelShape, names: AdapterTensorNames) -> Int? {
        guard names.permutesQueryAndKey else { return nil }
        switch projection {
        case "q": return base.headCount
        case "k": return base.kvHeadCount
        default: return nil
        }
    }

    static func from(gguf b: [Float], shape: [Int], projection: String, base: BaseModelShape, names: AdapterTensorNames) -> [Float] {
        guard let heads = heads(projection, base: base, names: names), shape.count == 2, shape[0] % (2 * heads) == 0 else { return b }
        return QueryKeyPermutation.toHuggingFace(b, rows: shape[0], columns: shape[1], heads: heads)
    }

    static func toGGUF(_ b: [Float], shape: [Int], projection: String, base: BaseModelShape, names: AdapterTensorNames) -> [Float] {
        // A shape that does not fit is left as it is: the base check names it.
        guard let heads = heads(projection, base: base, names: names), shape.count == 2,
              shape[0] == base.projections[projection]?.output, shape[0] % (2 * heads) == 0 else { return b }
        return QueryKeyPermutation.toGGUF(b, rows: shape[0], columns: shape[1], heads: heads)
    }
}
