import Model
import Testing
@testable import Training

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
