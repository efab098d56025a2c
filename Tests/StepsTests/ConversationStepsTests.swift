import AdaptCore
import Foundation
import JobQueue
import Model
import ReplayBuffer
@testable import Steps
import Testing
import TestSupport
import Training

/// Whole conversations through the steps (issue 26, item 7): held-out scoring judges the last assistant turn
/// given every turn before it, and forgetting a conversation erases every turn from every file of the state.
@Suite(.serialized) struct ConversationStepsTests {
    static let turns = [Turn(role: .system, content: "Be Ana."),
                        Turn(role: .user, content: "Invoice in?"), Turn(role: .assistant, content: "It came Monday."),
                        Turn(role: .user, content: "Send it?"), Turn(role: .assistant, content: "Sent."),
                        Turn(role: .user, content: "And two?"), Turn(role: .assistant, content: "Not yet.")]
    static let line = SnapshotExample(id: "c1", system: "Be Ana.", prompt: "And two?", completion: "Not yet.", weight: 1, tokens: 9,
                                      turns: turns)

    /// A scorer on a tiny model written into `directory`.
    static func scorer(in directory: TemporaryDirectory, maxLength: Int) throws -> HeldOutScorer {
        let url = directory.file("tiny.gguf")
        try TinyModel(seed: 5).write(to: url)
        return try HeldOutScorer(modelURL: url, maxLength: maxLength, base: .quantized)
    }

    @Test func heldOutScoringJudgesOnlyTheLastAssistantTurnGivenEverythingBeforeIt() throws {
        let directory = TemporaryDirectory()
        let scorer = try Self.scorer(in: directory, maxLength: 256)
        let line = Self.line
        let sequences = try scorer.sequences([line])
        let sequence = try #require(sequences.first?.sequence)

        let messages = Self.turns.map { ChatMessage(role: $0.role.rawValue, content: $0.content) }
        let segments = try LoRATrainingRun.tokens(of: messages, tokenizer: scorer.tokenizer, formatter: scorer.formatter)
        #expect(sequence.tokens == segments.flatMap(\.tokens))
        // Only the last reply is scored: its tokens, and every one of them.
        let last = try #require(segments.last)
        #expect(last.isTarget)
        let scored = sequence.weights.indices.filter { sequence.weights[$0] != 0 }
        #expect(scored == Array((sequence.tokens.count - last.tokens.count - 1)..<(sequence.tokens.count - 1)))
        #expect(try scorer.tokenizer.decode(last.tokens) == "Not yet." + scorer.formatter.endOfTurn)

        // The score is the mean NLL of that reply given all the turns before it.
        let score = try #require(scorer.score(sequences, adapter: nil).first)
        let context = Array(sequence.tokens.dropLast(last.tokens.count))
        let logProbabilities = scorer.model.logProbabilities(of: last.tokens, after: context)
        let expected = -logProbabilities.reduce(0, +) / Double(logProbabilities.count)
        #expect(abs(score.meanNLL - expected) < 1e-4 * max(1, abs(expected)), "\(score.meanNLL) vs \(expected)")
        // The earlier turns are context that matters: the last exchange alone scores differently.
        let alone = try scorer.sequences([SnapshotExample(id: "c1", system: nil, prompt: "And two?", completion: "Not yet.",
                                                          weight: 1, tokens: 4)])
        #expect(try #require(scorer.score(alone, adapter: nil).first).meanNLL != score.meanNLL)
    }

    @Test func aConversationLongerThanMaxLengthIsScoredOnItsWholeLastReply() throws {
        let directory = TemporaryDirectory()
        let scorer = try Self.scorer(in: directory, maxLength: 24)
        let line = Self.line
        let sequence = try #require(try scorer.sequences([line]).first?.sequence)
        let reply = scorer.tokenizer.encode("Not yet.") + scorer.tokenizer.encode(scorer.formatter.endOfTurn, parseSpecial: true)
        #expect(sequence.tokens.count == 24)
        #expect(Array(sequence.tokens.suffix(reply.count)) == reply)
        #expect(sequence.targetCount == reply.count)
    }

    /// Conversations whose every turn is text no logbook example shares.
    static func conversation(_ index: Int) -> [(role: String, content: String)] {
        [("system", "Persona quokka\(index) of Zanzibar writes tersely."),
         ("user", "Where did the walrus\(index) ledger go after Tuesday?"),
         ("assistant", "The walrus\(index) ledger sits in the blue cabinet drawer."),
         ("user", "Could you photograph page\(index) of the narwhal report?"),
         ("assistant", "Narwhal page\(index) photographed and filed in the archive."),
         ("user", "Thanks, pelican\(index) sends greetings."),
         ("assistant", "Greetings back to pelican\(index) from the harbour.")]
    }

    static func line(_ turns: [(role: String, content: String)]) -> String {
        let messages = turns.map { JSON.canonicalString(JSONValue.object(["role": .string($0.role), "content": .string($0.content)])) }
        return "{\"messages\":[" + messages.joined(separator: ",") + "],\"source\":\"chats\"}"
    }

    /// The logbook lineage with conversation 1 held out and conversations 2 to 4 to train on, and one night run
    /// on it (trained on the conversations, scored on them); returns the fixture and the run.
    func nightOnConversations() async throws -> (PipelineFixture, String) {
        let fixture = try await PipelineFixture.make(pipeline: PipelineFixture.pipeline(steps: 4, checkpointInterval: 2))
        let held = fixture.directory.file("held.jsonl"), train = fixture.directory.file("train.jsonl")
        try Data((Self.line(Self.conversation(1)) + "\n").utf8).write(to: held)
        try Data(((2...4).map { Self.line(Self.conversation($0)) }.joined(separator: "\n") + "\n").utf8).write(to: train)
        try fixture.expectSuccess(await fixture.adapt(["data", "import", held.path, "--lineage", "logbook", "--held-out"]))
        try fixture.expectSuccess(await fixture.adapt(["data", "import", train.path, "--lineage", "logbook"]))
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        #expect(try fixture.queue().run(try #require(RunID.parse(run))).counts[.succeeded] == 5)
        return (fixture, run)
    }

    @Test func aNightOnConversationsReplaysWithEveryDigestEqual() async throws {
        let (fixture, run) = try await nightOnConversations()
        let sample = try #require(try fixture.outputs(run)["sample"])
        let heldOut = try #require(sample["held_out_snapshot"]?.stringValue.flatMap(Digest.init(hex:)))
        let lines = try DatasetSnapshot.load(heldOut, from: fixture.directory.state.blobs)
        #expect(lines.contains { $0.turns?.count == 7 }, "the held-out snapshot has no whole conversation")
        let result = try await fixture.adapt(["replay", run, "--check", "--json"])
        let report = try JSON.decode(JSONValue.self, from: result.stdout, context: "replay output: \(result.stderr)")
        #expect(result.status == 0)
        #expect(report["equal"]?.boolValue == true, "\(result.stdout)")
    }

    @Test func forgettingConversationsLeavesNoTextOfAnyTurnInAnyFile() async throws {
        let (fixture, _) = try await nightOnConversations()

        let list = try JSON.decode(JSONValue.self, from: try await fixture.adapt(["data", "list", "--json"]).stdout, context: "list")
        let all = try #require(list.arrayValue)
        let conversations = all.filter { $0["turns"] != nil }
        #expect(conversations.count == 4)
        let kept = all.filter { $0["turns"] == nil }.flatMap { [$0["prompt"]?.stringValue ?? "", $0["completion"]?.stringValue ?? ""] }
        let texts = (1...4).flatMap { index in Self.conversation(index).enumerated().map { ("conversation \(index) turn \($0)", $1.content) } }
        let needles = PrivacyScan.needles(texts, others: kept)
        let before = PrivacyScan.hits(needles, under: fixture.directory.state.root)
        #expect(before.contains { $0.contains("/blobs/") && $0.hasSuffix(": conversation 1 turn 1") },
                "the held-out conversation's first question is in no snapshot blob: \(before)")

        let ids = conversations.compactMap { $0["id"]?.stringValue }
        let forget = try await fixture.adapt(["data", "forget", "--json"] + ids.flatMap { ["--id", $0] })
        try fixture.expectSuccess(forget)
        #expect(try JSON.decode(JSONValue.self, from: forget.stdout, context: "forget")["forgotten"]?.intValue == 4)
        let after = PrivacyScan.hits(needles, under: fixture.directory.state.root)
        #expect(after.isEmpty, "text of a forgotten turn is still on disk: \(after)")
    }
}
