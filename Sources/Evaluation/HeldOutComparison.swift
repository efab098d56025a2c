import AdaptCore

/// One held-out example's score under one model (+ adapter): the mean token negative log-likelihood of its
/// completion. Produced by the scorer (Model module) or read back from the score cache.
public struct ExampleScore: Sendable, Equatable, Codable {
    /// The replay buffer's id of the example (a digest or another short id; never the example's text).
    public let exampleID: String
    public let meanNLL: Double

    public init(exampleID: String, meanNLL: Double) {
        self.exampleID = exampleID
        self.meanNLL = meanNLL
    }
}

/// Pairs the candidate's and the incumbent's per-example scores by example id, the input of the gate.
///
/// Pairs are ordered by example id so the differences (and so the report) do not depend on the order in
/// which examples were scored. Every example must be scored on both sides exactly once: a held-out set that
/// silently lost examples on one side would bias the test.
public struct HeldOutComparison: Sendable, Equatable {
    public struct Pair: Sendable, Equatable {
        public let exampleID: String
        public let candidate: Double
        public let baseline: Double
        public var difference: Double { candidate - baseline }
    }

    public let pairs: [Pair]

    public init(candidate: [ExampleScore], baseline: [ExampleScore]) throws {
        func index(_ scores: [ExampleScore], side: String) throws -> [String: Double] {
            var table: [String: Double] = [:]
            for (position, score) in scores.enumerated() {
                guard score.meanNLL.isFinite else { throw EvaluationError.nonFiniteScore(side: side, index: position) }
                guard table.updateValue(score.meanNLL, forKey: score.exampleID) == nil else {
                    throw EvaluationError.duplicateExample(id: score.exampleID, side: side)
                }
            }
            return table
        }
        let candidates = try index(candidate, side: "candidate")
        let baselines = try index(baseline, side: "baseline")
        for id in candidates.keys.sorted() where baselines[id] == nil {
            throw EvaluationError.unpairedExample(id: id, missingFrom: "baseline")
        }
        for id in baselines.keys.sorted() where candidates[id] == nil {
            throw EvaluationError.unpairedExample(id: id, missingFrom: "candidate")
        }
        pairs = candidates.keys.sorted().map { Pair(exampleID: $0, candidate: candidates[$0]!, baseline: baselines[$0]!) }
    }

    /// `candidate − baseline` per example, in example-id order.
    public var differences: [Double] { pairs.map(\.difference) }
    public var candidateScores: [Double] { pairs.map(\.candidate) }
    public var baselineScores: [Double] { pairs.map(\.baseline) }
    /// A digest of the paired example ids: which held-out set was compared (recorded with the gate report).
    public var examplesDigest: Digest { Digest.sha256(pairs.map(\.exampleID).joined(separator: "\n")) }
}
