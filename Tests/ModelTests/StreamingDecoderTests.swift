@testable import Model
import Testing

@Test func streamingHoldsBackAPartialCharacterUntilItCompletes() throws {
    let tokenizer = try TinyVocabulary.make()
    var decoder = StreamingDecoder(tokenizer: tokenizer)
    // 👍 is F0 9F 91 8D; every byte is its own token in the tiny vocabulary.
    var outputs: [String] = []
    for byte in Array("a👍b".utf8) { outputs.append(try decoder.append(Int(byte))) }
    #expect(outputs == ["a", "", "", "", "👍", "b"])
    #expect(!outputs.joined().contains("\u{FFFD}"))
    #expect(decoder.finish() == "")
}

@Test func streamingFlushesAnUnfinishedCharacterAtTheEnd() throws {
    let tokenizer = try TinyVocabulary.make()
    var decoder = StreamingDecoder(tokenizer: tokenizer)
    #expect(try decoder.append(0xE4) == "")
    #expect(decoder.hasPending)
    #expect(decoder.finish() == "\u{FFFD}")
    #expect(!decoder.hasPending)
}

@Test func streamingReplacesAByteThatCanNeverBeValidAtOnce() throws {
    let tokenizer = try TinyVocabulary.make()
    var decoder = StreamingDecoder(tokenizer: tokenizer)
    #expect(try decoder.append(0x80) == "\u{FFFD}")
    #expect(try decoder.append(0xF0) == "")
    #expect(try decoder.append(0x41) == "\u{FFFD}A")  // a lead byte followed by ASCII is broken
}

@Test func streamingRefusesAnUnknownId() throws {
    let tokenizer = try TinyVocabulary.make()
    var decoder = StreamingDecoder(tokenizer: tokenizer)
    #expect(throws: ModelError.self) { try decoder.append(1_000_000) }
}
