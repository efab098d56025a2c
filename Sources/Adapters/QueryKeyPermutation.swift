/// The row order llama.cpp's converter gives the q and k weights of a `llama` GGUF, and its inverse.
///
/// Hugging Face's llama rotates dimension i of a head with dimension i + D/2; llama.cpp rotates adjacent
/// pairs, so the converter reorders each head's rows: GGUF row (h, 2i + j) is Hugging Face row (h, j·D/2 + i).
/// adapt trains against the GGUF's weights, so its B matrices of q and k are in GGUF order; PEFT and mlx-lm
/// apply B to Hugging Face's weights and need the other order. A is untouched (it maps the input).
public enum QueryKeyPermutation {
    /// B (out, rank) in GGUF row order → Hugging Face row order; `heads` is the projection's head count.
    public static func toHuggingFace(_ b: [Float], rows: Int, columns: Int, heads: Int) -> [Float] {
        permute(b, rows: rows, columns: columns, heads: heads) { head, half, i, j in
            (head * 2 * half + j * half + i, head * 2 * half + 2 * i + j)
        }
    }

    /// B (out, rank) in Hugging Face row order → GGUF row order.
    public static func toGGUF(_ b: [Float], rows: Int, columns: Int, heads: Int) -> [Float] {
        permute(b, rows: rows, columns: columns, heads: heads) { head, half, i, j in
            (head * 2 * half + 2 * i + j, head * 2 * half + j * half + i)
        }
    }

    /// Copies row `source` to row `destination` for every (head, i, j) the mapping gives.
    private static func permute(_ b: [Float], rows: Int, columns: Int, heads: Int,
                                _ mapping: (_ head: Int, _ half: Int, _ i: Int, _ j: Int) -> (destination: Int, source: Int)) -> [Float] {
        precondition(b.count == rows * columns && heads > 0 && rows % (2 * heads) == 0, "rows do not split into heads of pairs")
        let half = rows / heads / 2
        var out = [Float](repeating: 0, count: b.count)
        for head in 0..<heads {
            for i in 0..<half {
                for j in 0..<2 {
                    let (destination, source) = mapping(head, half, i, j)
                    for c in 0..<columns { out[destination * columns + c] = b[source * columns + c] }
                }
            }
        }
        return out
    }
}
