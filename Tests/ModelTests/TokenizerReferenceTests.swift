import Foundation
@testable import Model
import Testing

/// One text tokenized by llama.cpp (scripts/fixtures/reference_tokens.py).
private struct ReferenceCase: Decodable {
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
    let tokenizer = try #require(RealModel.tokenizer)
    let reference = try loadReference()
    #expect(reference.cases.count > 500)
    var disagreements = 0
    for item in reference.cases {
        let ids = tokenizer.encode(item.text, parseSpecial: item.special)
        if ids != item.ids {
            disagreements += 1
            Issue.record("\(item.special ? "special" : "plain") \(item.text.debugDescription): \(ids) != llama.cpp \(item.ids)")
        }
    }
    #expect(disagreements == 0)
}

@Test(.enabled(if: RealModel.isPresent, RealModel.absentReason))
func decodingAnEncodedTextGivesBackItsBytes() throws {
    let tokenizer = try #require(RealModel.tokenizer)
    for item in try loadReference().cases {
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
