import AdaptCore
import Evaluation
import Inference

/// The figures of one voice check, as a table for people and as `--json`.
public struct VoiceReport: Sendable {
    public let lineage: String
    public let version: String
    public let adapterDigest: Digest
    public let modelName: String
    public let modelDigest: Digest
    public let maxTokens: Int
    public let repeatPenalty: Double
    public let phrases: RecurringPhrases
    public let trainingReplies: Int
    public let examples: [String]
    public let base: [GenerationResult]
    public let adapter: [GenerationResult]
    public let seconds: Double

    static func replies(_ results: [GenerationResult]) -> [Reply] {
        results.map { Reply(text: $0.text, endedAtLimit: $0.finishReason == .maxTokens) }
    }

    public var baseMetrics: ReplyMetrics { ReplyMetrics(Self.replies(base), phrases: phrases) }
    public var adapterMetrics: ReplyMetrics { ReplyMetrics(Self.replies(adapter), phrases: phrases) }

    /// The `--json` document; the replies' text only with `includeText`.
    public func json(includeText: Bool) -> JSONValue {
        func metrics(_ m: ReplyMetrics) -> JSONValue {
            .object([
                "replies": .int(m.replies), "with_phrase": .int(m.withPhrase),
                "phrase_share": m.phraseShare.map { .double(rounded($0)) } ?? .null,
                "distinct_2": m.distinct2.map { .double(rounded($0)) } ?? .null,
                "distinct_bigrams": .int(m.distinctBigrams), "bigrams": .int(m.bigrams),
                "loops": .int(m.loops), "ended_at_max_tokens": .int(m.endedAtLimit),
            ])
        }
        func reply(_ r: GenerationResult) -> JSONValue {
            let read = Reply(text: r.text, endedAtLimit: r.finishReason == .maxTokens)
            var fields: [String: JSONValue] = [
                "generated_tokens": .int(r.generatedTokens), "finish_reason": .string(r.finishReason.rawValue),
                "phrases": .int(phrases.carried(by: r.text).count), "loop": .bool(ReplyMetrics.hasRepetitionLoop(read)),
            ]
            if includeText { fields["text"] = .string(r.text) }
            return .object(fields)
        }
        var phraseFields: [String: JSONValue] = [
            "count": .int(phrases.phrases.count), "training_completions": .int(trainingReplies),
            "min_completions": .int(phrases.minCompletions),
            "min_words": .int(RecurringPhrases.wordRange.lowerBound), "max_words": .int(RecurringPhrases.wordRange.upperBound),
        ]
        if includeText {
            phraseFields["list"] = .array(phrases.phrases.map {
                .object(["text": .string($0.text), "completions": .int($0.completions)])
            })
        }
        return .object([
            "lineage": .string(lineage), "version": .string(version), "adapter_digest": .string(adapterDigest.hex),
            "base_model": .object(["name": .string(modelName), "digest": .string(modelDigest.hex)]),
            "held_out_examples": .int(examples.count), "max_tokens": .int(maxTokens), "greedy": .bool(true),
            "repeat_penalty": .double(repeatPenalty),
            "phrases": .object(phraseFields),
            "base": metrics(baseMetrics), "adapter": metrics(adapterMetrics),
            "examples": .array(examples.indices.map { i in
                .object(["example_id": .string(examples[i]), "base": reply(base[i]), "adapter": reply(adapter[i])])
            }),
            "seconds": .double(rounded(seconds)),
        ])
    }

    func rounded(_ x: Double) -> Double { (x * 10_000).rounded() / 10_000 }
}
