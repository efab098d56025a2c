import Adapters
import Testing

// llama.cpp's converter reorders each head's q/k rows: GGUF row (h, 2i + j) is Hugging Face row (h, j·D/2 + i).

@Test func queryKeyPermutationMovesRowsAsTheConverterDoes() {
    // One head of dimension 4, one column: GGUF rows g0 g1 g2 g3 are Hugging Face rows 0, 2, 1, 3.
    let gguf: [Float] = [10, 11, 12, 13]
    #expect(QueryKeyPermutation.toHuggingFace(gguf, rows: 4, columns: 1, heads: 1) == [10, 12, 11, 13])
    // Two heads of dimension 4, two columns: each head moves on its own.
    let two: [Float] = (0..<16).map(Float.init)
    let hf = QueryKeyPermutation.toHuggingFace(two, rows: 8, columns: 2, heads: 2)
    #expect(hf == [0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15])
}

@Test func queryKeyPermutationIsUndoneExactly() {
    let rows = 64 * 3, columns = 8
    let values = (0..<(rows * columns)).map { Float($0) * 0.5 - 7 }
    let there = QueryKeyPermutation.toHuggingFace(values, rows: rows, columns: columns, heads: 3)
    #expect(there != values)
    #expect(QueryKeyPermutation.toGGUF(there, rows: rows, columns: columns, heads: 3) == values)
}
