import AdaptCore
import Foundation
import Model
import TestSupport
import Testing
@testable import Training

/// A whole conversation trains with the loss on every assistant turn and on nothing else (prompt masking as
/// mlx-lm's `--mask-prompt` intends it, extended to every reply), in the model's own chat format.
@Suite struct ConversationSequenceTests {
    static let conversation: [ChatMessage] = [
        .system("Be Ana."),
        .user("Invoice in?"), .assistant("It came Monday."),
        .user("Send it?"), .assistant("Sent."),
        .user("And two?"), .assistant("Not yet."),
    ]

    func tiny(_ directory: TemporaryDirectory) throws -> (URL, Tokenizer, ChatFormatter) {
        let url = directory.file("tiny.gguf")
        try TinyModel(seed: 5).write(to: url)
        let file = try GGUFFile(url: url)
        return (url, try Tokenizer(gguf: file), try ChatFormatter(gguf: file))
    }

    /// The runs of consecutive weighted target tokens of `sequence`, decoded.
    func weightedRuns(_ sequence: TrainingSequence, tokenizer: Tokenizer) throws -> [String] {
        var runs: [[Int]] = []
        var previous = false
        for (i, weight) in sequence.weights.enumerated() {
            if weight != 0 {
                if !previous { runs.append([]) }
                runs[runs.count - 1].append(sequence.tokens[i + 1])
            }
            previous = weight != 0
        }
        return try runs.map { try tokenizer.decode($0) }
    }

    @Test func lossMasksCoverExactlyTheAssistantTokensOfEveryTurn() throws {
        let directory = TemporaryDirectory()
        let (url, tokenizer, formatter) = try tiny(directory)
        let run = try LoRATrainingRun(modelURL: url, examples: [TrainingExample(conversation: Self.conversation, weight: 2)],
                                      lora: LoRAConfig(rank: 2, dropout: 0),
                                      configuration: TrainingConfiguration(steps: 2, maxLength: 4096))
        let sequence = try #require(run.training.first)
        #expect(run.truncatedCount == 0)
        // The tokens are the conversation as the chat formatter renders it.
        #expect(try tokenizer.decode(sequence.tokens) == (try formatter.format(Self.conversation, addGenerationPrompt: false)))
        // The weighted tokens are each assistant turn's content and end of turn, and nothing else.
        let replies = Self.conversation.filter { $0.role == "assistant" }.map { $0.content + formatter.endOfTurn }
        #expect(try weightedRuns(sequence, tokenizer: tokenizer) == replies)
        #expect(sequence.weights.allSatisfy { $0 == 0 || $0 == 2 })
        // Every token of a reply is weighted: the count matches the replies tokenized on their own.
        let replyTokens = Self.conversation.filter { $0.role == "assistant" }.reduce(0) {
            $0 + tokenizer.encode($1.content).count + tokenizer.encode(formatter.endOfTurn, parseSpecial: true).count
        }
        #expect(sequence.targetCount == replyTokens)
    }

    @Test func aOneExchangeConversationGivesTheSingleExchangeSequence() throws {
        let directory = TemporaryDirectory()
        let (url, tokenizer, formatter) = try tiny(directory)
        let pair = TrainingExample(prompt: "say hello", completion: "hello world")
        let segments = try LoRATrainingRun.tokens(of: [.user("say hello"), .assistant("hello world")], tokenizer: tokenizer,
                                                  formatter: formatter)
        let (prompt, completion) = try LoRATrainingRun.tokens(of: pair, tokenizer: tokenizer, formatter: formatter)
        #expect(segments == [TokenSegment(tokens: prompt, isTarget: false), TokenSegment(tokens: completion, isTarget: true)])
        var a = SequenceBuilder(maxLength: 64), b = SequenceBuilder(maxLength: 64)
        let built = (a.append(segments: segments, weight: 1.5), b.append(prompt: prompt, completion: completion, weight: 1.5))
        let (fromSegments, fromPair) = (try #require(built.0), try #require(built.1))
        #expect(fromSegments.tokens == fromPair.tokens && fromSegments.weights == fromPair.weights)
        _ = url
    }

    @Test func truncationKeepsTheBeginningAndDropsAConversationWithNoReplyLeft() throws {
        var builder = SequenceBuilder(maxLength: 6)
        let segments = [TokenSegment(tokens: [1, 2, 3], isTarget: false), TokenSegment(tokens: [4, 5], isTarget: true),
                        TokenSegment(tokens: [6, 7], isTarget: false), TokenSegment(tokens: [8, 9], isTarget: true)]
        let appended = builder.append(segments: segments, weight: 1)
        let cut = try #require(appended)
        #expect(cut.tokens == [1, 2, 3, 4, 5, 6])
        #expect(cut.weights == [0, 0, 1, 1, 0])
        #expect(builder.truncatedCount == 1)
        var short = SequenceBuilder(maxLength: 3)
        #expect(short.append(segments: segments, weight: 1) == nil)
        #expect(short.droppedCount == 1)
        #expect(segments.lastTargetOnly.map(\.isTarget) == [false, false, false, true])
        var scoring = SequenceBuilder(maxLength: 5)
        let scored = scoring.append(segments: segments.lastTargetOnly, weight: 1, keepingEnd: true)
        let end = try #require(scored)
        #expect(end.tokens == [5, 6, 7, 8, 9])
        #expect(end.weights == [0, 0, 1, 1])
    }

    @Test func aFormatterSegmentationJoinsToTheRenderedConversationInEveryConvention() throws {
        for convention in ChatConvention.allCases {
            let formatter = ChatFormatter(convention: convention)
            let messages = convention == .gemma ? Array(Self.conversation.dropFirst()) : Self.conversation
            let segments = try formatter.trainingSegments(messages)
            #expect(segments.map(\.text).joined() == (try formatter.format(messages, addGenerationPrompt: false)))
            #expect(segments.filter(\.isAssistant).count == 3, "\(convention)")
        }
    }
}
