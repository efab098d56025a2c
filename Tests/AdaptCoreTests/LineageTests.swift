import AdaptCore
import Testing

@Test(arguments: ["mail", "Mail-2", "a_b", "9", String(repeating: "a", count: 64)])
func lineageAcceptsLettersDigitsDashAndUnderscoreUpTo64(name: String) throws {
    #expect(try Lineage(validating: name).name == name)
    #expect(Lineage(name) != nil)
}

@Test(arguments: ["", "-", "_x", "-x", ".", "..", "a.b", "a/b", "a b", "é", "--json", "a\u{1b}b", String(repeating: "a", count: 65)])
func lineageRefusesAnyOtherName(name: String) {
    #expect(Lineage(name) == nil)
    #expect(throws: InvalidLineageName(name: name)) { try Lineage(validating: name) }
}

@Test func refusalNamesTheRuleAndShowsControlCharactersVisibly() {
    let message = InvalidLineageName(name: "a\u{1b}[2Jb").description
    #expect(message == "lineage 'a?[2Jb' is not a valid name; use 1 to 64 letters, digits, '-' or '_', starting with a letter or digit")
    let long = InvalidLineageName(name: String(repeating: "x", count: 100)).description
    #expect(long.contains(String(repeating: "x", count: 64) + "…'"))
    #expect(!long.contains(String(repeating: "x", count: 65)))
}
