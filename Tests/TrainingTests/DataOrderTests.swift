import AdaptCore
import Foundation
import Model
import Testing
@testable import Training

@Suite struct DataOrderTests {
    @Test func anEpochsOrderIsAPureFunctionOfSeedAndEpoch() {
        let a = DataOrder(count: 50, seed: 9), b = DataOrder(count: 50, seed: 9)
        #expect(a.permutation(epoch: 3) == b.permutation(epoch: 3))
        #expect(a.permutation(epoch: 3) == CounterRNG(seed: 9).permutation(50, .dataOrder, step: 3))
        #expect(a.permutation(epoch: 3) != a.permutation(epoch: 4))
        #expect(a.permutation(epoch: 3) != DataOrder(count: 50, seed: 10).permutation(epoch: 3))
        #expect(a.permutation(epoch: 0).sorted() == Array(0..<50))
    }

    @Test func batchesCrossIntoTheNextEpochAndTheCursorSaysWhere() {
        var order = DataOrder(count: 5, seed: 1)
        var cursor = DataCursor()
        var seen: [Int] = []
        for _ in 0..<4 { seen += order.take(3, from: &cursor) }   // 12 = two epochs and 2
        #expect(cursor == DataCursor(epoch: 2, index: 2))
        #expect(cursor == order.cursor(after: 12))
        #expect(Array(seen[0..<5]) == order.permutation(epoch: 0))
        #expect(Array(seen[5..<10]) == order.permutation(epoch: 1))
        #expect(Array(seen[10..<12]) == Array(order.permutation(epoch: 2).prefix(2)))
    }

    @Test func aRestoredCursorContinuesWithTheSameBatches() {
        var whole = DataOrder(count: 7, seed: 4)
        var cursor = DataCursor()
        let all = (0..<6).map { _ in whole.take(4, from: &cursor) }
        var resumed = DataOrder(count: 7, seed: 4)
        var restored = whole.cursor(after: 12)
        #expect((3..<6).map { _ in resumed.take(4, from: &restored) } == Array(all[3...]))
    }
}

@Suite struct SequenceBuilderTests {
    @Test func weightsOnlyTheCompletionTokens() throws {
        var builder = SequenceBuilder(maxLength: 32)
        let built = builder.append(prompt: [10, 11, 12], completion: [20, 21], weight: 1.5)
        let sequence = try #require(built)
        #expect(sequence.tokens == [10, 11, 12, 20, 21])
        // Position 2 predicts 20 and position 3 predicts 21.
        #expect(sequence.weights == [0, 0, 1.5, 1.5])
        #expect(sequence.targetCount == 2 && sequence.weightSum == 3)
    }

    @Test func truncatesLongSequencesAndCountsThem() throws {
        var builder = SequenceBuilder(maxLength: 5)
        let built = builder.append(prompt: [1, 2], completion: [3, 4, 5, 6, 7], weight: 1)
        let sequence = try #require(built)
        #expect(sequence.tokens == [1, 2, 3, 4, 5])
        #expect(sequence.weights == [0, 1, 1, 1])
        #expect(builder.truncatedCount == 1 && builder.droppedCount == 0)
    }

    @Test func dropsExamplesWithNothingLeftToLearn() {
        var builder = SequenceBuilder(maxLength: 4)
        let long = builder.append(prompt: [1, 2, 3, 4, 5], completion: [6], weight: 1)   // the prompt fills it
        let empty = builder.append(prompt: [1], completion: [], weight: 1)
        let unweighted = builder.append(prompt: [1], completion: [2], weight: 0)
        #expect(long == nil && empty == nil && unweighted == nil)
        #expect(builder.droppedCount == 3)
        #expect(builder.truncatedCount == 1)
    }
}

@Suite struct TrainingExampleTests {
    @Test func readsJSONLinesWithOptionalWeights() throws {
        let text = """
            {"prompt": "Hi", "completion": "Hello!"}

            {"prompt": "", "completion": "x", "weight": 2.5, "source": "mail"}
            """
        let examples = try TrainingExample.parseJSONLines(Data(text.utf8), name: "d.jsonl")
        #expect(examples == [TrainingExample(prompt: "Hi", completion: "Hello!"), TrainingExample(prompt: "", completion: "x", weight: 2.5)])
    }

    @Test func namesTheLineAndFieldButNeverTheText() {
        let text = "{\"prompt\": \"secret words\", \"completion\": \"ok\"}\n{\"prompt\": \"secret words\"}\n"
        #expect(throws: TrainingError.invalidDataset(file: "d.jsonl", line: 2, reason: "missing field \"completion\"")) {
            try TrainingExample.parseJSONLines(Data(text.utf8), name: "d.jsonl")
        }
        let negative = "{\"prompt\": \"a\", \"completion\": \"b\", \"weight\": -1}"
        let error = thrown { try TrainingExample.parseJSONLines(Data(negative.utf8), name: "d.jsonl") }
        #expect(error.map { "\($0)" }?.contains("line 1: weight must be a non-negative number") == true)
        let garbage = "secret words"
        #expect(thrown { try TrainingExample.parseJSONLines(Data(garbage.utf8), name: "d.jsonl") }.map { "\($0)".contains("secret") } == false)
    }
}
