@testable import Model
import Testing

/// Splits `text` with `rule` and returns the words.
private func words(_ text: String, _ rule: PreTokenizer) -> [String] {
    let scalars = text.unicodeScalars.map(\.value)
    let classes = scalars.map { ScalarClass.of($0).rawValue }
    var ends: [Int] = []
    scalars.withUnsafeBufferPointer { s in
        classes.withUnsafeBufferPointer { k in rule.split(s, k, 0..<s.count, into: &ends) }
    }
    var result: [String] = []
    var start = 0
    for end in ends {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars[start..<end].map { Unicode.Scalar($0)! })
        result.append(String(view))
        start = end
    }
    return result
}

@Test func gpt2KeepsALeadingBlankWithTheWordAndLeavesTheLastBlankOfARunToIt() {
    #expect(words("Hello world's  end 123\n", .gpt2) == ["Hello", " world", "'s", " ", " end", " 123", "\n"])
}

@Test func smollmIsolatesEveryDigitBeforeSplittingTheRest() {
    #expect(words("Hello world's  end 123\n", .smollm)
            == ["Hello", " world", "'s", " ", " end", " ", "1", "2", "3", "\n"])
}

@Test func llama3GroupsDigitsByThreeAndKeepsNewlinesTogether() {
    #expect(words("Hello world's  end 12345\n", .llama3)
            == ["Hello", " world", "'s", " ", " end", " ", "123", "45", "\n"])
    #expect(words("a\n\n  \n  b", .llama3) == ["a", "\n\n  \n", " ", " b"])
}

@Test func qwen2SplitsNumbersIntoSingleDigits() {
    #expect(words("x 12345", .qwen2) == ["x", " ", "1", "2", "3", "4", "5"])
}

@Test func contractionsAreCaseSensitiveForGPT2AndCaselessForLlama3() {
    #expect(words("IT'S it's", .gpt2) == ["IT", "'", "S", " it", "'s"])
    #expect(words("IT'S it's", .llama3) == ["IT", "'S", " it", "'s"])
    #expect(words("WE'LL", .llama3) == ["WE", "'LL"])
}

@Test func decomposedAccentsAreNotLetters() {
    // "e" + U+0301 COMBINING ACUTE ACCENT: the mark is neither \p{L} nor \p{N}.
    #expect(words("cafe\u{301} ok", .gpt2) == ["cafe", "\u{301}", " ok"])
}

@Test func trailingBlanksStayTogetherAtTheEndOfTheText() {
    #expect(words("a   ", .gpt2) == ["a", "   "])
    #expect(words("a   b", .gpt2) == ["a", "  ", " b"])
}

@Test func everyGGUFNameTheBriefListsIsKnown() {
    #expect(PreTokenizer(ggufName: "smollm") == .smollm)
    #expect(PreTokenizer(ggufName: "gpt2") == .gpt2)
    #expect(PreTokenizer(ggufName: "llama-bpe") == .llama3)
    #expect(PreTokenizer(ggufName: "qwen2") == .qwen2)
    #expect(PreTokenizer(ggufName: "no-such-rule") == nil)
}

@Test func codePointsNewerThanUnicode15Point1AreUnclassifiedAsInLlamaCpp() {
    // U+1C89 CYRILLIC CAPITAL LETTER TJE is a letter since Unicode 16.0; llama.cpp's tables predate it.
    #expect(ScalarClass.of(0x1C89) == [])
    #expect(ScalarClass.of(0x0416) == .letter)       // Ж
    #expect(ScalarClass.of(0x0663) == .number)       // ARABIC-INDIC DIGIT THREE
    #expect(ScalarClass.of(0x3000) == .whitespace)   // IDEOGRAPHIC SPACE
    #expect(ScalarClass.of(0x0301) == [])            // a combining mark is "other"
}
