import AdaptCore
import CommandLineKit
import Foundation
import Services

/// `adapt eval --lineage L --version N`: the engine's own gate report for a registered version, the one that makes
/// it promotable. `adapt eval voice`: does the active adapter speak in the lineage's voice? A check beside the
/// held-out NLL.
enum EvalCommands {
    static let all: [Command] = [gate, voice]

    static let gate = Command(
        "eval",
        summary: "score a registered version on its lineage's held-out set against the active version; the report makes it promotable",
        discussion: """
            The engine scores version N of lineage L (trained by the pipeline or added with 'registry add', \
            imports included) on the lineage's pinned held-out set, example by example (mean token NLL of the \
            completion), against the active version, or the base model when none is active, and runs the gate \
            of the nightly eval step: one-sided Wilcoxon signed-rank at alpha 0.05, at least 10 pairs. The report \
            is stored bound to the adapter's digest, the held-out snapshot's digest and the active version. \
            'registry promote' (without --force) accepts only such a report whose outcome is 'better', while the \
            held-out set and the active version are still those it was made with. Scores are cached by the \
            adapter's digest. A significant improvement smaller than the pipeline's minimum effect (median, in \
            nats of mean token NLL) is 'not_enough_evidence'. With --canary the forgetting guard runs too: on the \
            engine's canary, the version must show it keeps the base model's margin log p(right) − log p(wrong) \
            within delta 2 nats and the right replies' mean token NLL within 1 nat per token (each a one-sided \
            Wilcoxon at alpha 0.05, the nightly pipeline's default), else the outcome is 'forgets'.
            """,
        options: [RegistryCommands.lineage, versionNumber, TrainCommands.O.model, ModelCommands.chatFormat, canary, .json]
    ) { invocation in
        let args = invocation.arguments
        let lineage = try args.required(RegistryCommands.lineage)
        let number = try args.required(versionNumber)
        let state = try GlobalOptions.hostState(invocation)
        let modelURL = try args[TrainCommands.O.model].map { try TrainCommands.modelLocation($0, invocation) } ?? state.defaultModel
        let report = try VersionGate.evaluate(lineage: lineage, version: number, model: modelURL,
                                              chatFormat: try args[ModelCommands.chatFormat], canary: args[canary],
                                              registry: try RegistryCommands.existingRegistry(invocation)) { Console.error("adapt: \($0)") }
        if args[.json] { Console.print(JSON.pretty(report)); return }
        let outcome = report["outcome"]?.stringValue ?? "-"
        let against = report["incumbent"]?["version"]?.stringValue ?? "the base model"
        let p = report["p_value"]?.doubleValue.map { String(format: "%.4g", $0) } ?? "-"
        func nll(_ key: String) -> String { report[key]?.doubleValue.map { String(format: "%.4f", $0) } ?? "-" }
        Console.print("""
            \(lineage)/v\(number) against \(against): \(outcome) (n \(report["n"]?.intValue ?? 0), p \(p))
            held-out mean NLL \(nll("candidate_mean_nll")) vs \(nll("incumbent_mean_nll")) on snapshot \(report["held_out_digest"]?.stringValue?.prefix(12) ?? "-")
            \(report["reason"]?.stringValue ?? "")
            """)
        if let canary = report["canary"], canary != .null {
            let loss = canary["median_margin_loss"]?.doubleValue.map { String(format: "%.3g", $0) } ?? "-"
            let cp = canary["p_value"]?.doubleValue.map { String(format: "%.4g", $0) } ?? "-"
            var line = "forgetting guard: \(canary["outcome"]?.stringValue ?? "-") (median margin loss \(loss) nats, delta "
                + "\(canary["delta"]?.doubleValue ?? 0), p \(cp)"
            if let fluencyDelta = canary["fluency_delta"]?.doubleValue {
                let fluency = canary["median_fluency_loss"]?.doubleValue.map { String(format: "%.3g", $0) } ?? "-"
                let fp = canary["fluency_p_value"]?.doubleValue.map { String(format: "%.4g", $0) } ?? "-"
                line += "; median fluency loss \(fluency) nats per token, delta \(fluencyDelta), p \(fp)"
            }
            Console.print(line + ")")
        }
        if outcome == "better" { Console.print("promote it with: adapt registry promote \(lineage)/v\(number)") }
    }

    static let canary = Flag("canary", help: "also run the forgetting guard on the engine's canary (outcome 'forgets' when it fails)")

    /// `--version N` (or `vN`): the registered version to score.
    static let versionNumber = Option<Int?>("version", value: "N", default: nil, help: "the version to score (N or vN)") { text in
        let digits = text.hasPrefix("v") ? String(text.dropFirst()) : text
        guard let number = Int(digits), number >= 1, String(number) == digits else {
            throw UsageError("a version is a number from 1 (e.g. 3 or v3)")
        }
        return number
    }

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
        options: [lineage, model, maxTokens, minCompletions, repeatPenalty, ModelCommands.chatFormat, ModelCommands.threadsOption,
                  includeText, .json]
    ) { invocation in
        let args = invocation.arguments
        let request: VoiceCheck.Request
        do {
            request = try VoiceCheck.Request(
                lineage: try args.required(lineage), model: try args[model].map { URL(fileURLWithPath: $0) },
                maxTokens: try args[maxTokens], minCompletions: try args[minCompletions], repeatPenalty: try args[repeatPenalty],
                threads: try ModelCommands.threads(args), chatFormat: try args[ModelCommands.chatFormat])
        } catch let error as UsageError { throw error } catch { throw UsageError("\(error)") }
        let report = try await VoiceCheck.run(request, state: try GlobalOptions.stateDirectory(invocation),
                                              database: try GlobalOptions.readOnlyDatabase(invocation)) { Console.error("adapt: \($0)") }
        if args[.json] {
            Console.print(JSON.pretty(report.json(includeText: args[includeText])))
        } else {
            Console.print(report.table(includeText: args[includeText]))
        }
    }

    static let lineage = Option<Lineage?>("lineage", value: "L", default: nil, help: "the lineage to check") {
        try Lineage(validating: $0)
    }
    static let model = Option<String?>("model", value: "M", help: "base model GGUF file (default state/models/\(DefaultModel.fileName))")
    static let maxTokens = Option("max-tokens", default: defaultMaxTokens, in: 1...100_000, help: "most new tokens per reply")
    static let minCompletions = Option<Int?>("min-completions", value: "K", default: nil,
                                             help: "training replies a phrase must occur in (default: one in ten, at least 2)") { text in
        let value = try OptionParsing.integer(text)
        guard value >= 1 else { throw UsageError("must be 1 or more, got \(value)") }
        return value
    }
    static let repeatPenalty = Option("repeat-penalty", value: "R", default: 1.0, defaultHelp: "1 = off",
                                      help: "CTRL repetition penalty over the last 64 tokens, on top of greedy") { try OptionParsing.number($0) }
    static let includeText = Flag("include-text", help: "also print the phrases and every reply (the lineage's text)")
}
