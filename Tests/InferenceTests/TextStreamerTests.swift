import Testing
@testable import Inference

private func feed(_ streamer: inout TextStreamer, _ chunks: [[UInt8]]) -> [String] {
    chunks.map { streamer.append($0) }
}

@Test func multiByteCharacterSplitAcrossTokensIsShownOnlyWhenComplete() {
    var streamer = TextStreamer(stopStrings: [])
    let e = Array("é".utf8), smile = Array("🙂".utf8)
    let out = feed(&streamer, [[UInt8(ascii: "a"), e[0]], [e[1]], [smile[0]], [smile[1], smile[2]], [smile[3], UInt8(ascii: "!")]])
    #expect(out == ["a", "é", "", "", "🙂!"])
    #expect(streamer.text == "aé🙂!")
}

@Test func stopStringSpanningTokensIsTrimmedWithEverythingAfterIt() {
    var streamer = TextStreamer(stopStrings: ["<|end|>"])
    let out = feed(&streamer, [Array("Hello <|".utf8), Array("end".utf8), Array("|> more".utf8), Array("x".utf8)])
    #expect(out == ["Hello ", "", "", ""])
    #expect(streamer.isStopped)
    #expect(streamer.matchedStop == "<|end|>")
    #expect(streamer.text == "Hello ")
    #expect(streamer.finish() == "")
}

@Test func textHeldBackForAPossibleStopIsReleasedWhenItTurnsOutNotToBeOne() {
    var streamer = TextStreamer(stopStrings: ["ab"])
    #expect(streamer.append(Array("xa".utf8)) == "x")
    #expect(streamer.append(Array("c".utf8)) == "ac")
    #expect(streamer.append(Array("a".utf8)) == "")
    #expect(streamer.finish() == "a")
    #expect(streamer.text == "xaca")
    #expect(!streamer.isStopped)
}

@Test func theEarliestOfSeveralStopStringsWins() {
    var streamer = TextStreamer(stopStrings: ["world", "lo w", ""])
    #expect(streamer.append(Array("hello world".utf8)) == "hel")
    #expect(streamer.matchedStop == "lo w")
}

@Test func stopStringWithMultiByteCharactersMatchesAcrossSplitBytes() {
    var streamer = TextStreamer(stopStrings: ["ünd"])
    let u = Array("ü".utf8)
    #expect(streamer.append(Array("a ".utf8) + [u[0]]) == "a ")
    #expect(streamer.append([u[1]]) == "")
    #expect(streamer.append(Array("nd rest".utf8)) == "")
    #expect(streamer.text == "a ")
}

@Test func unfinishedCharacterAtTheEndBecomesAReplacementCharacter() {
    var streamer = TextStreamer(stopStrings: [])
    #expect(streamer.append([UInt8(ascii: "a"), 0xE2, 0x82]) == "a")
    #expect(streamer.finish() == "\u{FFFD}")
}

@Test func completeUTF8PrefixCountsOnlyFinishedSequences() {
    #expect(TextStreamer.completeUTF8Prefix([]) == 0)
    #expect(TextStreamer.completeUTF8Prefix(Array("ab".utf8)) == 2)
    #expect(TextStreamer.completeUTF8Prefix(Array(Array("a€".utf8).dropLast())) == 1)
    #expect(TextStreamer.completeUTF8Prefix(Array("€".utf8)) == 3)
    #expect(TextStreamer.completeUTF8Prefix([0x80, 0x80]) == 2)
}
