import Foundation
import Model
import Testing

/// Logits of the default model against an independent numpy implementation
/// (scripts/fixtures/reference_logits.py: float64, HF's rotate-half RoPE on un-permuted Q and K).
struct ReferenceLogitsTests {
    struct Fixture: Decodable {
        struct Entry: Decodable { let id: Int; let logit: Double }
        struct Position: Decodable { let position: Int; let top: [Entry] }
        struct Sequence: Decodable { let name: String; let tokens: [Int]; let positions: [Position] }
        let sequences: [Sequence]
    }

    static let fixture: Fixture = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/smollm2_reference_logits.json")
        return try! JSONDecoder().decode(Fixture.self, from: Data(contentsOf: url))
    }()

    /// Every one of the reference's top-20 logits, at the first, middle and last positions of four sequences,
    /// within 2e-4 absolute (measured: 3e-5 at worst; logits here are of order 10–30), and the reference's
    /// arg-max is ours.
    @Test(.enabled(if: RealModel.isPresent, RealModel.absentReason), arguments: fixture.sequences.map(\.name))
    func logitsAgreeWithTheNumpyReference(sequence name: String) throws {
        // The f32 arithmetic is what the numpy pass checks; 8-bit decoding is bounded in QuantizedMatVecTests.
        let model = try LlamaModel(url: RealModel.path, quantizedDecode: false)
        let sequence = Self.fixture.sequences.first { $0.name == name }!
        var cache = KVCache()
        let logits = model.forwardAll(tokens: sequence.tokens, cache: &cache)
        let V = model.hyperparameters.vocabularySize
        var worst = 0.0
        for position in sequence.positions {
            let row = Array(logits[(position.position * V)..<((position.position + 1) * V)])
            for entry in position.top { worst = max(worst, abs(Double(row[entry.id]) - entry.logit)) }
            let argmax = row.indices.max { row[$0] < row[$1] }!
            #expect(argmax == position.top[0].id, "position \(position.position)")
        }
        print("\(name): max |logit − reference| = \(worst)")
        #expect(worst <= 2e-4)
    }
}
