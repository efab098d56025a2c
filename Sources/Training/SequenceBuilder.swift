import Model

// `TrainingSequence` (tokens, and `weights[i]` = the loss weight of predicting `tokens[i + 1]`, so
// `weights.count == tokens.count − 1`; 0 on the prompt) is the model's batch type.

extension TrainingSequence {
    /// The sum of the weights: how much this sequence counts in a weighted mean.
    public var weightSum: Double { weights.reduce(0) { $0 + Double($1) } }

    /// Number of positions whose next token is predicted with a non-zero weight.
    public var targetCount: Int { weights.reduce(0) { $0 + ($1 != 0 ? 1 : 0) } }
}

/// Builds training sequences from (formatted prompt tokens, completion tokens, weight), truncating to a
/// maximum length and counting what truncation did, so the caller can warn once with the totals.
public struct SequenceBuilder: Sendable {
    public let maxLength: Int
    /// Sequences that were cut to `maxLength`.
    public private(set) var truncatedCount = 0
    /// Examples dropped because nothing of their completion survived truncation (or it was empty, or the
    /// weight was not positive).
    public private(set) var droppedCount = 0

    public init(maxLength: Int) {
        precondition(maxLength >= 2, "a sequence needs at least one input and one target token")
        self.maxLength = maxLength
    }

    /// The sequence for one example, or nil when it has nothing to learn from (counted in `droppedCount`).
    ///
    /// Truncation keeps the beginning, so the chat header and the prompt stay intact and the end of a long
    /// completion is lost (what mlx-lm and most trainers do).
    public mutating func append(prompt: [Int], completion: [Int], weight: Float) -> TrainingSequence? {
        guard weight > 0, weight.isFinite, !completion.isEmpty else {
            droppedCount += 1
            return nil
        }
        var tokens = prompt + completion
        if tokens.count > maxLength {
            tokens.removeLast(tokens.count - maxLength)
            truncatedCount += 1
        }
        var weights = [Float](repeating: 0, count: tokens.count - 1)
        // Position i predicts token i + 1; it is a completion target when i + 1 >= prompt.count.
        let first = max(prompt.count - 1, 0)
        if first < tokens.count - 1 {
            for i in first..<(tokens.count - 1) { weights[i] = weight }
        } else {
            droppedCount += 1
            return nil
        }
        return TrainingSequence(tokens: tokens, weights: weights)
    }

    /// The sequence for one example given as segments (`LoRATrainingRun.segments`): the loss is taken on the
    /// tokens of target segments only, each with `weight`. Truncation keeps the beginning, as `append(prompt:…)`
    /// does, or with `keepingEnd` the end (held-out scoring: the last reply, given as much of the conversation
    /// before it as fits); nil (counted in `droppedCount`) when no target token survives it or the weight is not
    /// positive. Two segments, context then target, give exactly `append(prompt:completion:weight:)`'s sequence.
    public mutating func append(segments: [TokenSegment], weight: Float, keepingEnd: Bool = false) -> TrainingSequence? {
        var tokens: [Int] = []
        var isTarget: [Bool] = []
        for segment in segments {
            tokens += segment.tokens
            isTarget += Array(repeating: segment.isTarget, count: segment.tokens.count)
        }
        guard weight > 0, weight.isFinite, isTarget.contains(true) else {
            droppedCount += 1
            return nil
        }
        if tokens.count > maxLength {
            if keepingEnd {
                tokens.removeFirst(tokens.count - maxLength)
                isTarget.removeFirst(isTarget.count - maxLength)
            } else {
                tokens.removeLast(tokens.count - maxLength)
                isTarget.removeLast(isTarget.count - maxLength)
            }
            truncatedCount += 1
        }
        // Position i predicts token i + 1 (the first token is never predicted).
        let weights = (0..<max(tokens.count - 1, 0)).map { isTarget[$0 + 1] ? weight : 0 }
        guard weights.contains(where: { $0 != 0 }) else {
            droppedCount += 1
            return nil
        }
        return TrainingSequence(tokens: tokens, weights: weights)
    }
}
