import Foundation
@testable import Model
import Testing

/// One text tokenized by llama.cpp (scripts/fixtures/reference_tokens.py).
private struct ReferenceCase: Decodable {
    /// The `tokenizer.ggml.pre` llama.cpp used (the real model's vocabulary under each rule).
    let pre: String
    let text: String
    let special: Bool
    let ids: [Int]
}

private struct ReferenceDocument: Decodable {
    let generator: String
    let model_sha256: String
    let cases: [ReferenceCase]
}

private func loadReference() throws -> ReferenceDocument {
    let data = try Data(contentsOf: RealModel.fixture("smollm2_tokens.json"))
    return try JSONDecoder().decode(ReferenceDocument.self, from: data)
}

@Test(.enabled(if: RealModel.isPresent, RealModel.absentReason))
func tokenizationAgreesWithLlamaCppOnEveryReferenceText() throws {
    let model = try GGUFFile(url: RealModel.path)
    let reference = try loadReference()
    let rules = Set(reference.cases.map(\.pre))
    #expect(rules == ["smollm", "gpt-2", "llama-bpe", "qwen2"])
    #expect(reference.cases.filter { $0.pre == "smollm" }.count > 500)
    var disagreements = 0
    for rule in rules.sorted() {
        // The real vocabulary under each rule, as the fixture script's vocabulary-only copies have it.
        let tokenizer = try Tokenizer(tokens: model.stringArray("tokenizer.ggml.tokens")!,
                                      merges: model.stringArray("tokenizer.ggml.merges")!,
                                      tokenTypes: model.intArray("tokenizer.ggml.token_type")!,
                                      preTokenizer: rule, bos: 1, eos: 2, addBOS: false)
        for item in reference.cases where item.pre == rule {
            let ids = tokenizer.encode(item.text, parseSpecial: item.special)
            if ids != item.ids {
                disagreements += 1
                Issue.record("\(rule) \(item.special ? "special" : "plain") \(item.text.debugDescription): \(ids) != llama.cpp \(item.ids)")
            }
        }
    }
    #expect(disagreements == 0)
}

@Test(.enabled(if: RealModel.isPresent, RealModel.absentReason))
func decodingAnEncodedTextGivesBackItsBytes() throws {
    let tokenizer = try #require(RealModel.tokenizer)
    for item in try loadReference().cases where item.pre == "smollm" {
        // Compare bytes: String equality is canonical equivalence and would hide an NFC/NFD change.
        let bytes = try tokenizer.decodeBytes(tokenizer.encode(item.text, parseSpecial: item.special))
        #expect(bytes == Array(item.text.utf8), "\(item.text.debugDescription)")
    }
}

@Test(.enabled(if: RealModel.isPresent, RealModel.absentReason))
func streamingDecodeOfTheRealVocabularyNeverBreaksACharacter() throws {
    let tokenizer = try #require(RealModel.tokenizer)
    let text = "Emoji 👨‍👩‍👧‍👦 🇫🇷 and 日本語 and naïve"
    var decoder = StreamingDecoder(tokenizer: tokenizer)
    var streamed = ""
    for id in tokenizer.encode(text) {
        let chunk = try decoder.append(id)
        #expect(!chunk.contains("\u{FFFD}"))
        streamed += chunk
    }
    streamed += decoder.finish()
    #expect(Array(streamed.utf8) == Array(text.utf8))
}

@Test(.enabled(if: RealModel.isPresent, RealModel.absentReason))
func realVocabularyHasTheFactsDesignStates() throws {
    let tokenizer = try #require(RealModel.tokenizer)
    #expect(tokenizer.count == 49152)
    #expect(tokenizer.preTokenizer == .smollm)
    #expect(tokenizer.bos == 1 && tokenizer.eos == 2 && !tokenizer.addBOS)
    #expect(tokenizer.encode("<|im_start|>user", parseSpecial: true).first == 1)
}

@Test(.enabled(if: RealModel.isPresent, RealModel.absentReason))
func encodingALargeTextRoundTripsAndReportsItsThroughput() throws {
    let tokenizer = try #require(RealModel.tokenizer)
    // About 1 MB of mixed text: every reference text, many times over.
    let unit = try loadReference().cases.filter { $0.pre == "smollm" }.map(\.text).joined(separator: "\n")
    let text = String(repeating: unit + "\n", count: max(1, 1_000_000 / unit.utf8.count))
    let clock = ContinuousClock()
    var ids: [Int] = []
    let elapsed = clock.measure { ids = tokenizer.encode(text) }
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
    print("tokenizer: \(text.utf8.count) bytes → \(ids.count) tokens in \(String(format: "%.3f", seconds)) s "
          + "(\(Int(Double(ids.count) / seconds)) tokens/s, \(String(format: "%.2f", Double(text.utf8.count) / seconds / 1e6)) MB/s)")
    #expect(try tokenizer.decodeBytes(ids) == Array(text.utf8))
}
