import Foundation
@testable import Model
import Testing

/// A small byte-level vocabulary: the 256 byte tokens (ids 0…255 in byte order), a few merges, and two
/// specials.
enum TinyVocabulary {
    static let merges = ["h e", "l l", "he ll", "hell o", "Ġ w", "o r", "Ġw or"]
    static let merged = ["he", "ll", "hell", "hello", "Ġw", "or", "Ġwor"]

    static func make(preTokenizer: String = "gpt2") throws -> Tokenizer {
        let bytes = (0..<256).map { String(Unicode.Scalar(ByteLevel.scalarForByte[$0])!) }
        let tokens = bytes + merged + ["<|im_start|>", "<tool>"]
        let types = Array(repeating: 1, count: bytes.count + merged.count) + [3, 4]
        return try Tokenizer(tokens: tokens, merges: merges, tokenTypes: types, preTokenizer: preTokenizer,
                             bos: nil, eos: nil, addBOS: false)
    }

    static func id(_ text: String, in tokenizer: Tokenizer) -> Int { tokenizer.id(of: text)! }
}

@Test func byteMappingRoundTripsEveryByte() {
    let all = (0..<256).map(UInt8.init)
    #expect(ByteLevel.decode(ByteLevel.encode(all)) == all)
    #expect(ByteLevel.encode([0x20]) == "Ġ")
    #expect(ByteLevel.encode([0x0A]) == "Ċ")
}

@Test func mergesApplyLowestRankFirst() throws {
    let tokenizer = try TinyVocabulary.make()
    let ids = tokenizer.encode("hello world")
    let expected = ["hello", "Ġwor", "l", "d"].map { TinyVocabulary.id($0, in: tokenizer) }
    #expect(ids == expected)
    #expect(try tokenizer.decode(ids) == "hello world")
}

@Test func controlTokensAreMatchedOnlyWhenAsked() throws {
    let tokenizer = try TinyVocabulary.make()
    let start = TinyVocabulary.id("<|im_start|>", in: tokenizer)
    #expect(tokenizer.encode("<|im_start|>", parseSpecial: true) == [start])
    let plain = tokenizer.encode("<|im_start|>", parseSpecial: false)
    #expect(!plain.contains(start))
    #expect(try tokenizer.decode(plain) == "<|im_start|>")
    #expect(tokenizer.encode("he<|im_start|>he", parseSpecial: true)
            == [TinyVocabulary.id("he", in: tokenizer), start, TinyVocabulary.id("he", in: tokenizer)])
}

@Test func userDefinedTokensAreMatchedEvenWithoutParseSpecial() throws {
    let tokenizer = try TinyVocabulary.make()
    #expect(tokenizer.encode("<tool>", parseSpecial: false) == [TinyVocabulary.id("<tool>", in: tokenizer)])
}

@Test func unknownIdIsATypedError() throws {
    let tokenizer = try TinyVocabulary.make()
    #expect(throws: ModelError.invalidToken(id: 99_999, vocabulary: tokenizer.count)) { try tokenizer.decode([99_999]) }
    #expect(throws: ModelError.invalidToken(id: -1, vocabulary: tokenizer.count)) { try tokenizer.piece(-1) }
}

@Test func unsupportedPreTokenizerIsATypedErrorNamingIt() throws {
    #expect(throws: ModelError.unsupportedPreTokenizer("bloom")) { try TinyVocabulary.make(preTokenizer: "bloom") }
}

@Test func mismatchedTokenTypesAreRejected() {
    #expect(throws: ModelError.self) {
        try Tokenizer(tokens: ["a", "b"], merges: [], tokenTypes: [1], preTokenizer: "gpt2", bos: nil, eos: nil, addBOS: false)
    }
}

@Test func addBOSPrependsTheBOSToken() throws {
    let bytes = (0..<256).map { String(Unicode.Scalar(ByteLevel.scalarForByte[$0])!) }
    let tokenizer = try Tokenizer(tokens: bytes + ["<s>"], merges: [], tokenTypes: Array(repeating: 1, count: 256) + [3],
                                  preTokenizer: "gpt2", bos: 256, eos: nil, addBOS: true)
    #expect(tokenizer.encode("a", addBOS: true) == [256, 0x61])
    #expect(tokenizer.encode("a") == [0x61])
}

@Test func piecesShowPartialCharactersAsByteEscapes() throws {
    let tokenizer = try TinyVocabulary.make()
    #expect(try tokenizer.piece(0xF0) == "<0xF0>")
    #expect(try tokenizer.piece(TinyVocabulary.id("Ġwor", in: tokenizer)) == " wor")
}

@Test(arguments: [7, 31, 1234])
func heapMergeAgreesWithTheNaiveMerge(seed: Int) throws {
    // Random words over a vocabulary whose merges overlap a lot, including ties of repeated pairs.
    let bytes = (0..<256).map { String(Unicode.Scalar(ByteLevel.scalarForByte[$0])!) }
    let merges = ["a a", "a b", "b a", "aa aa", "ab ab", "aa b", "ba a", "b b", "bb a", "aaaa a", "abab a", "bba b"]
    let results = merges.map { $0.replacingOccurrences(of: " ", with: "") }
    var seen = Set(bytes)
    let tokens = bytes + results.filter { seen.insert($0).inserted }
    let tokenizer = try Tokenizer(tokens: tokens, merges: merges, tokenTypes: [], preTokenizer: "gpt2",
                                  bos: nil, eos: nil, addBOS: false)
    var merger = tokenizer.merger
    var state = UInt64(seed)
    for _ in 0..<300 {
        var word: [Int32] = []
        state = state &* 6364136223846793005 &+ 1442695040888963407
        let length = Int(state >> 59) + 1 + (Int(state >> 40) % 3 == 0 ? 40 : 0)
        for _ in 0..<length {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            word.append(tokenizer.byteSymbols[Int(state >> 63) == 0 ? 0x61 : 0x62])
        }
        var fast: [Int32] = []
        word.withUnsafeBufferPointer { merger.merge($0, into: &fast) }
        #expect(fast == merger.mergeNaive(word))
    }
}
