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

@Test func streamingReplacesABrokenSequenceAsTheStringDecoderDoes() throws {
    let tokenizer = try TinyVocabulary.make()
    for bytes: [UInt8] in [[0xF0, 0x9F, 0x41], [0xE2, 0x28, 0xA1], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80]] {
        var decoder = StreamingDecoder(tokenizer: tokenizer)
        var text = ""
        for byte in bytes { text += try decoder.append(Int(byte)) }
        text += decoder.finish()
        #expect(text == String(decoding: bytes, as: UTF8.self), "\(bytes)")
    }
}
