import AdaptCore
import CommandLineKit
import Evaluation
import Foundation
import Inference
import Model
import Registry
import ReplayBuffer

/// `adapt eval voice`: does the active adapter speak in the lineage's voice? A check beside the held-out NLL.
enum EvalCommands {
    static let all: [Command] = [voice]

    static let defaultMaxTokens = 128

    static let voice = Command(
        "eval voice",
        summary: "greedy replies of the base model and the active adapter to the held-out prompts: recurring phrases, distinct-2, loops",
        discussion: """
            Each held-out example of the lineage is answered twice, greedily: by the base model and by the \
            lineage's active adapter. The prompt is what held-out scoring gives the model: the user's message, or \
            for a conversation every turn before its last reply. The lineage's recurring phrases are learned now \
            from its training split's replies: word sequences of 2 to 4 words inside one clause, held by at least \
            one reply in ten (at least 2; --min-completions K to choose), not made of stop words only, a fragment \
            of a longer phrase held by the same replies dropped. Per model it reports the share of replies that \
            carry at least one of them, distinct-2 (distinct word bigrams / all word bigrams of the replies), and \
            the replies in a repetition loop (a run of 1 to 16 words repeated 3 times back to back, or a reply cut \
            at --max-tokens whose last 6 words, before the possibly cut last one, appeared earlier in it). \
            Phrases and replies are the user's text: printed only with --include-text, never stored or logged.
            """,
        options: [
            OptionSpec("lineage", value: "L", help: "the lineage to check"),
            OptionSpec("model", value: "M", help: "base model GGUF file (default state/models/\(DefaultModel.fileName))"),
            OptionSpec("max-tokens", value: "N", help: "most new tokens per reply (default \(defaultMaxTokens))"),
            OptionSpec("min-completions", value: "K",
                       help: "training replies a phrase must occur in (default: one in ten, at least 2)"),
            OptionSpec("repeat-penalty", value: "R",
                       help: "CTRL repetition penalty over the last 64 tokens, on top of greedy (default 1 = off)"),
            ModelCommands.threadsOption,
            .flag("include-text", help: "also print the phrases and every reply (the lineage's text)"),
            .json,
        ]) { invocation in
            try await runVoice(invocation)
        }

    static func runVoice(_ invocation: Invocation) async throws {
        let args = invocation.arguments
        let checked = try Lineage.option(try args.required("lineage"))
        let (lineage, identifier) = (checked.name, ShortIdentifier(checked))
        let maxTokens = try args.int("max-tokens", default: defaultMaxTokens, in: 1...100_000)
        let minCompletions = try args.int("min-completions").map { value -> Int in
            guard value >= 1 else { throw UsageError("--min-completions must be 1 or more, got \(value)") }
            return value
        }
        var sampling = SamplingOptions.greedy
        let repeatPenalty = try args.double("repeat-penalty") ?? 1
        sampling.repeatPenalty = Float(repeatPenalty)
        do { try sampling.validate() } catch { throw UsageError("\(error)") }
        let includeText = args.flag("include-text")
        let json = args.flag("json")
        if let threads = try ModelCommands.threads(args) { try BLAS.setThreads(threads) }

        let state = try GlobalOptions.stateDirectory(invocation)
        let database = try GlobalOptions.readOnlyDatabase(invocation)
        let store = try ReplayStore(database: database)
        guard try store.lineages().contains(lineage) else { throw VoiceCheckError.unknownLineage(lineage) }
        let heldOut = try store.examples(lineage: lineage, split: .heldOut)
        guard !heldOut.isEmpty else { throw VoiceCheckError.noHeldOutExamples(lineage) }
        let replies = try store.examples(lineage: lineage, split: .train).flatMap(trainingReplies)
        guard !replies.isEmpty else { throw VoiceCheckError.noTrainingCompletions(lineage) }
        let phrases = RecurringPhrases(learningFrom: replies, minCompletions: minCompletions)

        let registry = try AdapterRegistry(database: database, blobs: state.blobs)
        guard let version = try registry.active(lineage: identifier) else { throw VoiceCheckError.noActiveAdapter(lineage) }
        let modelURL = args.string("model").map { URL(fileURLWithPath: $0) }
            ?? state.defaultModel
        guard FileManager.default.fileExists(atPath: modelURL.path) else {
            throw VoiceCheckError.missingModel(path: modelURL.path, isDefault: args.string("model") == nil)
        }
        let base = try BaseModel.load(modelURL)
        guard let bundle = try RegistryAdapterCatalog(registry: registry).activeAdapter(lineage: lineage) else {
            throw VoiceCheckError.noActiveAdapter(lineage)
        }
        let session = base.session()
        // Training formats prompts with the template's default thinking switch; so does this check.
        let options = GenerationOptions(sampling: sampling, maxTokens: maxTokens, enableThinking: true)
        let prompts = heldOut.map(prompt)

        let clock = ContinuousClock()
        let start = clock.now
        Console.error("adapt: answering \(prompts.count) held-out prompts with the base model, then with \(lineage)/\(version.name)")
        var baseReplies: [GenerationResult] = []
        for messages in prompts { baseReplies.append(try await session.generate(.chat(messages), options: options)) }
        try await session.attach(bundle)
        var adapterReplies: [GenerationResult] = []
        for messages in prompts { adapterReplies.append(try await session.generate(.chat(messages), options: options)) }
        let seconds = GenerateCommand.seconds(clock.now - start)

        let report = VoiceReport(lineage: lineage, version: version.name, adapterDigest: version.adapterDigest,
                                 modelName: modelURL.lastPathComponent, modelDigest: base.digest, maxTokens: maxTokens,
                                 repeatPenalty: repeatPenalty,
                                 phrases: phrases, trainingReplies: replies.count, examples: heldOut.map(\.id),
                                 base: baseReplies, adapter: adapterReplies, seconds: seconds)
        if json {
            Console.print(JSON.pretty(report.json(includeText: includeText)))
        } else {
            Console.print(report.table(includeText: includeText))
        }
    }

    /// Every reply training takes the loss on: each assistant turn of a conversation, or the completion.
    static func trainingReplies(_ example: Example) -> [String] {
        guard let turns = example.turns else { return [example.completion] }
        return turns.filter { $0.role == .assistant }.map(\.content)
    }

    /// What held-out scoring conditions the last reply on: a single exchange's user message (its system line
    /// unused, as in training), or every turn of a conversation before its last assistant turn.
    static func prompt(_ example: Example) -> [ChatMessage] {
        guard let turns = example.turns else { return [.user(example.prompt)] }
        let end = turns.lastIndex { $0.role == .assistant } ?? turns.endIndex
        return turns[..<end].map { ChatMessage(role: $0.role.rawValue, content: $0.content) }
    }
}

/// The figures of one voice check, as a table for people and as `--json`.
struct VoiceReport {
    let lineage: String
    let version: String
    let adapterDigest: Digest
    let modelName: String
    let modelDigest: Digest
    let maxTokens: Int
    let repeatPenalty: Double
    let phrases: RecurringPhrases
    let trainingReplies: Int
    let examples: [String]
    let base: [GenerationResult]
    let adapter: [GenerationResult]
    let seconds: Double

    static func replies(_ results: [GenerationResult]) -> [Reply] {
        results.map { Reply(text: $0.text, endedAtLimit: $0.finishReason == .maxTokens) }
    }

    var baseMetrics: ReplyMetrics { ReplyMetrics(Self.replies(base), phrases: phrases) }
    var adapterMetrics: ReplyMetrics { ReplyMetrics(Self.replies(adapter), phrases: phrases) }

    func json(includeText: Bool) -> JSONValue {
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

    func table(includeText: Bool) -> String {
        func percent(_ share: Double?) -> String { share.map { String(format: "%.0f%%", $0 * 100) } ?? "-" }
        var table = Table("MODEL", "REPLIES", "WITH PHRASE", "DISTINCT-2", "LOOPS", "AT MAX TOKENS")
        for (name, m) in [("base", baseMetrics), ("\(lineage)/\(version)", adapterMetrics)] {
            table.append([name, "\(m.replies)", "\(m.withPhrase) (\(percent(m.phraseShare)))",
                          m.distinct2.map { String(format: "%.3f", $0) } ?? "-", "\(m.loops)", "\(m.endedAtLimit)"])
        }
        var lines = [
            "voice check of \(lineage): \(examples.count) held-out prompts, greedy"
                + (repeatPenalty == 1 ? "" : " with repetition penalty \(repeatPenalty)")
                + ", at most \(maxTokens) new tokens, "
                + String(format: "%.0f s", seconds),
            "\(phrases.phrases.count) recurring phrase\(phrases.phrases.count == 1 ? "" : "s"), each in at least "
                + "\(phrases.minCompletions) of \(trainingReplies) training replies",
            table.render(),
        ]
        if includeText {
            lines.append("phrases:")
            lines += phrases.phrases.map { "  \(TerminalText.escaped($0.text)) (\($0.completions) replies)" }
            for (i, id) in examples.enumerated() {
                lines.append("example \(id.prefix(12)):")
                lines.append("  base:    " + TerminalText.escaped(base[i].text))
                lines.append("  adapter: " + TerminalText.escaped(adapter[i].text))
            }
        }
        return lines.joined(separator: "\n")
    }

    func rounded(_ x: Double) -> Double { (x * 10_000).rounded() / 10_000 }
}

/// Why `adapt eval voice` cannot check a lineage; each says what to do.
enum VoiceCheckError: Error, CustomStringConvertible {
    case unknownLineage(String)
    case noHeldOutExamples(String)
    case noTrainingCompletions(String)
    case noActiveAdapter(String)
    case missingModel(path: String, isDefault: Bool)

    var description: String {
        switch self {
        case let .unknownLineage(lineage):
            return "no lineage \(lineage) in this state; 'adapt data stats' lists the lineages, "
                + "'adapt data import FILE --lineage \(lineage)' starts one"
        case let .noHeldOutExamples(lineage):
            return "lineage \(lineage) has no held-out examples to prompt with; import some "
                + "('adapt data import FILE --lineage \(lineage) --held-out')"
        case let .noTrainingCompletions(lineage):
            return "lineage \(lineage) has no training examples to learn its phrases from; import some with "
                + "'adapt data import FILE --lineage \(lineage)'"
        case let .noActiveAdapter(lineage):
            return "lineage \(lineage) has no active adapter to check; run a night first "
                + "('adapt enqueue nightly --lineage \(lineage)', then 'adapt work'), or promote a version"
        case let .missingModel(path, isDefault):
            return "no model file at \(path); " + (isDefault ? "run scripts/fetch-model, or pass --model FILE" : "pass --model with an existing GGUF file")
        }
    }
}
