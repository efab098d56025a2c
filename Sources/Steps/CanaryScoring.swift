import AdaptCore
import Evaluation
import Model
import Registry
import ReplayBuffer
import Training

/// The canary's items as sequences a `HeldOutScorer` scores, and each model's margins and right-reply NLL on them.
///
/// Each reply is formatted and tokenized as a held-out example is (the run's chat template, prompt markers and
/// `max_length`), so a margin is measured the way the gate measures the held-out set. The margin of an item is
/// log p(right) − log p(wrong), each the sum of the reply's token log-probabilities (end-of-turn marker included)
/// given the prompt: the log-odds of the model giving one whole reply rather than the other. A sum, not a mean,
/// because that is what the model prefers when it answers; the two replies of an item differ by a word or two, so
/// their lengths hardly differ. The fluency of an item is the right reply's mean token NLL, as a held-out score is.
///
/// Scores go through the score cache like held-out scores (keyed by the sequence's tokens), so the base model's
/// canary is scored once per model key and a night costs one candidate pass.
struct CanaryScoring {
    let set: CanarySet
    /// Two sequences per item kept, right then wrong, in item order: an item one of whose replies leaves nothing
    /// to score within `max_length` is left out, for every model alike.
    let sequences: [(id: String, sequence: TrainingSequence)]

    init(set: CanarySet, scorer: HeldOutScorer) throws {
        self.set = set
        var kept: [(id: String, sequence: TrainingSequence)] = []
        for (index, item) in set.items.enumerated() {
            let replies = [("right", item.right), ("wrong", item.wrong)].map { side, reply in
                SnapshotExample(id: "\(set.name)/\(index)/\(side)", system: nil, prompt: item.prompt, completion: reply,
                                weight: 1, tokens: 0)
            }
            let pair = try scorer.sequences(replies)
            if pair.count == 2 { kept += pair }
        }
        sequences = kept
    }

    /// The margin and the right reply's mean token NLL of every item kept under `adapter` (nil: the base model), with
    /// how many sequence scores came from the cache and the new cache entries (stored by the caller in its job's
    /// completion transaction). Both come from the same cached scores: the fluency part costs no extra scoring.
    func scores(scorer: HeldOutScorer, adapter: LoRAParameters?, weights: ScoreCache.Weights, cache: ScoreCache,
                modelKey: Digest) throws -> (scores: CanaryScores, cached: Int, fresh: [ScoreCache.Entry]) {
        let (scores, cached, fresh) = try scorer.score(sequences, adapter: adapter, weights: weights, cache: cache, modelKey: modelKey)
        // log p(reply) = −(mean token NLL × scored tokens); the scorer scores the positions whose weight is not zero.
        let logProbabilities = zip(scores, sequences).map { score, entry in
            -score.meanNLL * Double(Self.scoredTokens(entry.sequence))
        }
        let margins = stride(from: 0, to: logProbabilities.count, by: 2).map { logProbabilities[$0] - logProbabilities[$0 + 1] }
        let rightNLL = stride(from: 0, to: scores.count, by: 2).map { scores[$0].meanNLL }
        return (CanaryScores(margins: margins, rightNLL: rightNLL), cached, fresh)
    }

    /// The positions `HeldOutScorer.score` averages over: inputs (every token but the last) whose weight is not zero.
    static func scoredTokens(_ sequence: TrainingSequence) -> Int {
        sequence.weights.prefix(max(0, sequence.tokens.count - 1)).filter { $0 != 0 }.count
    }
}
