import AdaptCore
import Foundation
import ReplayBuffer
import Testing
import TestSupport

/// Conversations stay whole (issue 26, item 7): a `messages` line keeps every turn, in order, scrubbed; its
/// token count covers every turn; `--max-length` drops the oldest turns and says how many conversations it cut.
@Suite struct ConversationImportTests {
    /// Three exchanges after a system turn; the first reply only makes sense with the first question.
    static let conversation: [(role: String, content: String)] = [
        ("system", "You write like Ana."),
        ("user", "Did the invoice from Brightwater arrive?"),
        ("assistant", "It did, on Monday; I filed it under March."),
        ("user", "Can you send it to me? My mail is ana.lopez@example.com"),
        ("assistant", "Sent to [EMAIL] just now."),
        ("user", "Thanks. And the second one?"),
        ("assistant", "Still waiting on that one, I'll chase them tomorrow."),
    ]

    static func line(_ turns: [(role: String, content: String)], extra: String = "") -> String {
        let messages = turns.map { JSON.canonicalString(JSONValue.object(["role": .string($0.role), "content": .string($0.content)])) }
        return "{\"messages\":[" + messages.joined(separator: ",") + "]" + extra + "}"
    }

    static var scrubbedConversation: [(role: String, content: String)] {
        conversation.map { ($0.role, $0.content.replacingOccurrences(of: "ana.lopez@example.com", with: "[EMAIL]")) }
    }

    @Test func importingAThreeExchangeConversationKeepsEveryTurnInDataList() throws {
        let adapt = AdaptData()
        let file = try adapt.write("chat.jsonl", Self.line(Self.conversation) + "\n"
            + "{\"prompt\":\"single\",\"completion\":\"turn\"}\n")
        let report = try adapt.json(["data", "import", file, "--lineage", "mail"])
        #expect(report["imported"] == .int(2))
        #expect(report["scrubbed"]?["email"] == .int(1))

        let list = try #require(try adapt.json(["data", "list", "--lineage", "mail"]).arrayValue)
        #expect(list.count == 2)
        let whole = try #require(list.first { $0["turns"] != nil })
        let turns = try #require(whole["turns"]?.arrayValue)
        #expect(turns.map { $0["role"]?.stringValue ?? "" } == Self.conversation.map(\.role))
        #expect(turns.map { $0["content"]?.stringValue ?? "" } == Self.scrubbedConversation.map(\.content))
        // The designed fields keep their meaning: the last user turn and the last assistant turn.
        #expect(whole["prompt"] == .string("Thanks. And the second one?"))
        #expect(whole["completion"] == .string("Still waiting on that one, I'll chase them tomorrow."))
        #expect(whole["system"] == .string("You write like Ana."))
        for field in ["id", "lineage", "source", "weight", "split", "created_at"] { #expect(whole[field] != nil, "\(field)") }
        // A single exchange has no turns field: it reads as before.
        let single = try #require(list.first { $0["prompt"] == .string("single") })
        #expect(single["turns"] == nil)

        let table = try adapt.run(["data", "list", "--lineage", "mail"])
        #expect(table.status == 0)
        #expect(table.stdout.contains("7 turns"), "\(table.stdout)")
    }

    @Test(arguments: Backend.allCases)
    func theTokenCountCoversEveryTurnAndTheIdEveryTurn(_ backend: Backend) throws {
        let fixture = try BufferFixture(backend)
        _ = try fixture.store.importJSONL(Data(Self.line(Self.conversation).utf8), lineage: "mail")
        let example = try #require(try fixture.store.examples(lineage: "mail").first)
        let counter = ByteEstimateTokenCounter()
        #expect(example.tokenCount == Self.scrubbedConversation.reduce(0) { $0 + counter.count($1.content) })
        #expect(example.turns?.count == 7)

        // Changing an early turn makes another example: the id covers it.
        var changed = Self.conversation
        changed[1].content = "Did the invoice from Greenwater arrive?"
        let second = try fixture.store.importJSONL(Data(Self.line(changed).utf8), lineage: "mail")
        #expect(second.imported == 1 && second.duplicates == 0)
        // The same conversation again is a duplicate.
        let again = try fixture.store.importJSONL(Data(Self.line(Self.conversation).utf8), lineage: "mail")
        #expect(again.imported == 0 && again.duplicates == 1)
    }

    @Test(arguments: Backend.allCases)
    func aSingleExchangeMessagesLineKeepsItsEarlierId(_ backend: Backend) throws {
        let fixture = try BufferFixture(backend)
        let exchange = [("system", "Be brief."), ("user", "lunch?"), ("assistant", "Sure, noon.")]
        _ = try fixture.store.importJSONL(Data(Self.line(exchange).utf8), lineage: "mail")
        let example = try #require(try fixture.store.examples(lineage: "mail").first)
        #expect(example.turns == nil)
        #expect(example.id == ExampleID.make(lineage: "mail", system: "Be brief.", prompt: "lunch?", completion: "Sure, noon.", source: "import"))
        #expect(example.conversation == [Turn(role: .system, content: "Be brief."), Turn(role: .user, content: "lunch?"),
                                         Turn(role: .assistant, content: "Sure, noon.")])
    }


    @Test func maxLengthDropsTheOldestTurnsKeepsTheSystemAndLastExchangeAndIsCounted() throws {
        let adapt = AdaptData()
        let short = [("user", "hi"), ("assistant", "hello")] + [("user", "and?"), ("assistant", "ok")]
        let file = try adapt.write("chat.jsonl", Self.line(Self.conversation) + "\n" + Self.line(short) + "\n")
        let counter = ByteEstimateTokenCounter()
        let lastTwo = Self.scrubbedConversation.suffix(4)
        // Room for the system turn and the last two exchanges, not for the first exchange.
        let limit = counter.count(Self.conversation[0].content) + lastTwo.reduce(0) { $0 + counter.count($1.content) }
        let report = try adapt.json(["data", "import", file, "--lineage", "mail", "--max-length", "\(limit)"])
        #expect(report["imported"] == .int(2))
        #expect(report["truncated_conversations"] == .int(1))
        #expect(report["turns_dropped"] == .int(2))

        let list = try #require(try adapt.json(["data", "list", "--lineage", "mail"]).arrayValue)
        let cut = try #require(list.first { $0["system"] == .string("You write like Ana.") })
        let turns = try #require(cut["turns"]?.arrayValue)
        #expect(turns.map { $0["content"]?.stringValue ?? "" } == [Self.conversation[0].content] + lastTwo.map(\.content))
        #expect(cut["token_count"] == .int(limit))

        let words = try adapt.run(["data", "import", file, "--lineage", "other", "--max-length", "1"])
        #expect(words.status == 0)
        // With one token of room, each keeps only its system turn and last exchange.
        #expect(words.stdout.contains("2 conversations cut to --max-length (6 turns dropped)"), "\(words.stdout)")
        let tiny = try #require(try adapt.json(["data", "list", "--lineage", "other"]).arrayValue)
        // Cut to one exchange, each is stored as a single exchange is.
        let kept = try #require(tiny.first { $0["system"] == .string("You write like Ana.") })
        #expect(kept["turns"] == nil)
        #expect(kept["prompt"] == .string("Thanks. And the second one?"))
        let single = try #require(tiny.first { $0["prompt"] == .string("and?") })
        #expect(single["turns"] == nil)

        let bad = try adapt.run(["data", "import", file, "--lineage", "mail", "--max-length", "0"])
        #expect(bad.status == 2 && bad.stderr.contains("--max-length"), "\(bad.stderr)")
    }

    @Test func truncationResumesAtAUserTurn() {
        let turns = [Turn(role: .system, content: "s"), Turn(role: .assistant, content: "greeting"),
                     Turn(role: .user, content: "q1"), Turn(role: .assistant, content: "a1"),
                     Turn(role: .user, content: "q2"), Turn(role: .assistant, content: "a2")]
        let (kept, dropped) = Conversation.truncated(turns, maxTokens: 5, tokens: { $0.content.count })
        #expect(kept.map(\.content) == ["s", "q2", "a2"])
        #expect(dropped == 3)
        let fits = Conversation.truncated(turns, maxTokens: 100, tokens: { $0.content.count })
        #expect(fits.turns == turns && fits.dropped == 0)
    }
}
