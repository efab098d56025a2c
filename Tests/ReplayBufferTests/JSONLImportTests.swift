import AdaptCore
import Foundation
import ReplayBuffer
import Testing
import TestSupport

@Test(arguments: [
    ("not json at all", "invalid JSON"),
    ("{\"prompt\": \"a\", \"completion\": }", "invalid JSON"),
    ("[1, 2]", "not a JSON object"),
    ("{\"prompt\": \"a\"}", "missing field \"completion\""),
    ("{\"completion\": \"a\"}", "missing field \"prompt\""),
    ("{\"prompt\": 1, \"completion\": \"a\"}", "field \"prompt\" must be a string"),
    ("{\"prompt\": \"a\", \"completion\": [\"a\"]}", "field \"completion\" must be a string"),
    ("{\"text\": 5}", "field \"text\" must be a string"),
    ("{\"prompt\": \"a\", \"completion\": \"  \"}", "empty completion"),
    ("{\"text\": \"\"}", "empty completion"),
    ("{\"prompt\": \"a\", \"completion\": \"b\", \"weight\": 0}", "field \"weight\" must be a number from 0.000001 to 1000000"),
    ("{\"prompt\": \"a\", \"completion\": \"b\", \"weight\": -2}", "field \"weight\" must be a number from 0.000001 to 1000000"),
    ("{\"prompt\": \"a\", \"completion\": \"b\", \"weight\": \"1\"}", "field \"weight\" must be a number from 0.000001 to 1000000"),
    // Finite as a Double, but infinite or zero as the trainer's Float, or too large to sum over a batch.
    ("{\"prompt\": \"a\", \"completion\": \"b\", \"weight\": 1e39}", "field \"weight\" must be a number from 0.000001 to 1000000"),
    ("{\"prompt\": \"a\", \"completion\": \"b\", \"weight\": 1e38}", "field \"weight\" must be a number from 0.000001 to 1000000"),
    ("{\"prompt\": \"a\", \"completion\": \"b\", \"weight\": 1e-46}", "field \"weight\" must be a number from 0.000001 to 1000000"),
    ("{\"prompt\": \"a\", \"completion\": \"b\", \"weight\": 1000000.5}", "field \"weight\" must be a number from 0.000001 to 1000000"),
    ("{\"prompt\": \"a\", \"completion\": \"b\", \"source\": 3}", "field \"source\" must be a string"),
    ("{\"prompt\": \"a\", \"completion\": \"b\\u0000c\"}", "field \"completion\" contains a NUL character"),
    ("{\"foo\": \"bar\"}", "unknown format: expected \"prompt\" and \"completion\", \"messages\" or \"text\""),
    ("{\"messages\": \"hi\"}", "field \"messages\" must be an array"),
    ("{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}]}", "the last message must be the assistant's"),
    ("{\"messages\": [{\"role\": \"assistant\", \"content\": \"a\"}]}", "no user message before the last assistant message"),
    ("{\"messages\": [{\"role\": \"tool\", \"content\": \"a\"}]}", "messages[0] has an unknown role (expected system, user or assistant)"),
    ("{\"messages\": [{\"role\": \"user\"}]}", "messages[0] needs a string \"content\""),
])
func badLineIsReportedWithItsNumberAndNothingIsStored(line: String, reason: String) throws {
    let fixture = try BufferFixture()
    try fixture.importLines(3)
    let before = try fixture.snapshotOfTables()
    let input = Data(("{\"text\": \"fine\"}\n\n" + line + "\n{\"text\": \"also fine\"}\n").utf8)
    let report = try fixture.store.importJSONL(input, lineage: "mail")
    #expect(report.problems == [LineProblem(line: 3, reason: reason)])
    #expect(!report.committed)
    #expect(report.imported == 0)
    #expect(try fixture.snapshotOfTables() == before)
}

@Test(arguments: Backend.allCases)
func invalidUTF8AndOversizedRecordsAreReportedByLine(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    var data = Data("{\"text\": \"ok\"}\n{\"text\": \"".utf8)
    data.append(contentsOf: [0xC3, 0x28])
    data.append(Data("\"}\n{\"text\": \"\(String(repeating: "x", count: 300))\"}\n".utf8))
    let store = fixture.store
    let report = try store.importJSONL(data, lineage: "mail", options: ImportOptions(reader: JSONLReader(maxRecordBytes: 200)))
    #expect(report.problems == [LineProblem(line: 2, reason: "invalid UTF-8"),
                                LineProblem(line: 3, reason: "record is 312 bytes, over the limit of 200")])
    #expect(try store.examples().isEmpty)
    #expect(try fixture.snapshotOfTables().isEmpty)
}

@Test(arguments: Backend.allCases)
func skipBadImportsTheGoodLinesAndReportsTheRest(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    let input = Data("{\"text\": \"one\"}\nnope\n{\"text\": \"two\"}\n{\"prompt\": 3, \"completion\": \"x\"}\n".utf8)
    let report = try fixture.store.importJSONL(input, lineage: "mail", options: ImportOptions(skipBad: true))
    #expect(report.committed)
    #expect(report.imported == 2 && report.skipped == 2 && report.records == 4)
    #expect(report.problems.map(\.line) == [2, 4])
    #expect(try fixture.store.examples().map(\.completion).sorted() == ["one", "two"])
}

@Test(arguments: Backend.allCases)
func reimportingTheSameLinesIsANoOpReportedAsDuplicates(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    let first = try fixture.importLines(5)
    fixture.clock.advance(milliseconds: day)
    let second = try fixture.importLines(7)
    #expect(first.imported == 5)
    #expect(second.imported == 2 && second.duplicates == 5)
    let examples = try fixture.store.examples()
    #expect(examples.count == 7)
    // The first import's rows kept their creation time: a duplicate does not refresh the TTL.
    #expect(examples.filter { $0.createdAt == fixture.clock.nowMilliseconds() - day }.count == 5)
}

@Test(arguments: Backend.allCases)
func chatRecordsKeepTheSystemMessageTheLastUserTurnAndTheLastAnswer(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    let line = """
        {"messages": [{"role": "system", "content": "Be short."}, {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Plan my day"},
        {"role": "assistant", "content": "Gym, then work."}], "weight": 2.5, "source": "chat-log"}
        """.replacingOccurrences(of: "\n", with: " ")
    let text = "{\"text\": \"Just a completion.\"}"
    _ = try fixture.store.importJSONL(Data((line + "\n" + text).utf8), lineage: "mail")
    let examples = try fixture.store.examples().sorted { $0.completion < $1.completion }
    #expect(examples.count == 2)
    let chat = examples[0], plain = examples[1]
    #expect(chat.system == "Be short." && chat.prompt == "Plan my day" && chat.completion == "Gym, then work.")
    #expect(chat.weight == 2.5 && chat.source == "chat-log")
    #expect(plain.system == nil && plain.prompt == "" && plain.completion == "Just a completion.")
    #expect(plain.weight == 1 && plain.source == "import")
    #expect(plain.tokenCount == ("Just a completion.".utf8.count + 3) / 4 && !plain.tokenCountExact)
}

@Test(arguments: Backend.allCases)
func importScrubsBeforeStoringAndRecordsCountsPerKind(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    let line = #"{"prompt": "reach me at ana@example.org", "completion": "IBAN DE89 3704 0044 0532 0130 00, card 4111-1111-1111-1111, tel 030 12345678", "source": "ana@example.org"}"#
    let report = try fixture.store.importJSONL(Data(line.utf8), lineage: "mail")
    #expect(report.scrubbed[.email] == 2 && report.scrubbed[.iban] == 1 && report.scrubbed[.card] == 1 && report.scrubbed[.phone] == 1)
    let example = try #require(try fixture.store.examples().first)
    #expect(example.prompt == "reach me at [EMAIL]")
    #expect(example.completion == "IBAN [IBAN], card [CARD], tel [PHONE]")
    #expect(example.source == "[EMAIL]")
    // Nothing of the original text is anywhere in the database file or its log (SQLite's: on PostgreSQL the
    // statements carried only the scrubbed text, as the stored example shows).
    let files = try FileManager.default.contentsOfDirectory(at: fixture.directory.state.root, includingPropertiesForKeys: nil)
    for file in files where file.lastPathComponent.hasPrefix("adapt.sqlite") {
        let bytes = try Data(contentsOf: file)
        #expect(bytes.range(of: Data("ana@example.org".utf8)) == nil)
        #expect(bytes.range(of: Data("4111-1111".utf8)) == nil)
    }
    #expect(try fixture.store.stats(lineage: "mail").first?.scrubbed == report.scrubbed)
}


@Test func aCallerCanAppendItsOwnScrubber() throws {
    struct TicketScrubber: Scrubber {
        var kind: ScrubKind { ScrubKind(rawValue: "ticket") }
        func scrub(_ text: String) -> (text: String, count: Int) {
            let parts = text.components(separatedBy: "TCK-")
            return (parts.joined(separator: kind.placeholder + "-"), parts.count - 1)
        }
    }
    let pipeline = ScrubPipeline.standard.appending(TicketScrubber())
    let (text, counts) = pipeline.scrub("TCK-1 for bob@example.com")
    #expect(text == "[TICKET]-1 for [EMAIL]")
    #expect(counts[ScrubKind(rawValue: "ticket")] == 1 && counts[.email] == 1)
}

@Test(arguments: Backend.allCases)
func weightsAtTheEndsOfTheDocumentedRangeAreAccepted(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    let input = Data("""
        {"text": "light", "weight": 0.000001}
        {"text": "heavy", "weight": 1000000}
        """.utf8)
    let report = try fixture.store.importJSONL(input, lineage: "mail")
    #expect(report.problems.isEmpty && report.imported == 2)
    #expect(Set(try fixture.store.examples().map(\.weight)) == [Example.weightRange.lowerBound, Example.weightRange.upperBound])
}
