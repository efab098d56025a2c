import AdaptCore
import JobQueue
import Report
import ReplayBuffer
import Steps

/// The gate section of a run's report: the eval step's recorded verdict and per-example scores, the promote step's
/// decision, and (only when asked) the held-out examples' text from the snapshot the eval step scored.
enum ReportGateReading {
    /// The eval step's output is the record; nil until it succeeded.
    static func of(eval: JobRecord?, promote: JobRecord?, lineage: String?, includeText: Bool, blobs: any BlobStorage) throws -> ReportGate? {
        guard let eval, eval.state == .succeeded, let output = eval.output else { return nil }
        let recorded = try EvalOutput(jobOutput: output)
        let report = recorded.gate.report
        var promoted: Bool?, promoteReason: String?, version: String?
        if let promote, promote.state == .succeeded, let output = promote.output {
            let decision = try PromoteOutput(jobOutput: output)
            promoted = decision.promoted
            promoteReason = decision.reason
            if let name = output["registry"]?["version"]?.stringValue { version = lineage.map { "\($0)/\(name)" } ?? name }
        }
        var examples = zip(recorded.incumbentScores, recorded.candidateScores).enumerated().map { index, pair in
            ReportGate.Example(index: index + 1, incumbent: pair.0, candidate: pair.1)
        }
        if includeText { examples = try withText(examples, snapshot: recorded.inputs.heldOutSnapshot, blobs: blobs) }
        return ReportGate(
            jobID: eval.id.description, comparedWith: recorded.incumbent?.version ?? "base", outcome: recorded.outcome.rawValue,
            method: report.method, zeroMethod: report.zeroMethod.rawValue, alternative: report.alternative.rawValue, n: report.n,
            pairs: report.pairs, statistic: report.statistic, pValue: report.pValue, alpha: report.alpha,
            medianDifference: report.medianDifference, reason: report.reason, candidateMeanNLL: recorded.candidateMeanNLL,
            incumbentMeanNLL: recorded.incumbentMeanNLL, promoted: promoted, promoteReason: promoteReason, version: version,
            examples: examples)
    }

    /// The examples with their text, when the snapshot is still stored and its examples are the scored ones one for
    /// one (a held-out example too long to score leaves the pairing unknown, and then no text is shown).
    static func withText(_ examples: [ReportGate.Example], snapshot: Digest, blobs: any BlobStorage) throws -> [ReportGate.Example] {
        let stored: [SnapshotExample]
        do { stored = try DatasetSnapshot.load(snapshot, from: blobs) } catch CoreError.blobMissing { return examples }
        guard stored.count == examples.count else { return examples }
        return zip(examples, stored).map { example, text in
            var example = example
            example.id = text.id
            example.prompt = text.prompt
            example.completion = text.completion
            return example
        }
    }
}
