import Foundation
import Model
import Testing

/// Found by the tokenizer fuzz target (docs/fuzzing.md): SmolLM2's vocabulary has no token for 21 of the 256 bytes,
/// `\u{06}` among them. The encoder drops such a byte as llama.cpp does (llama-cpp-python 0.3.36 on the same
/// file: `tokenize(b"a\x06b")` is [81, 82], which detokenizes to "ab"), so the text around it still round-trips.
@Test(.enabled(if: RealModel.isPresent, RealModel.absentReason))
func aByteTheVocabularyHasNoTokenForIsDroppedAsLlamaCppDrops() throws {
    let tokenizer = try #require(RealModel.tokenizer)
    #expect(tokenizer.encode("a\u{06}b") == [81, 82])
    #expect(tokenizer.encode("\u{06}") == [])
    #expect(try tokenizer.decode(tokenizer.encode("a\u{06}b")) == "ab")
}
