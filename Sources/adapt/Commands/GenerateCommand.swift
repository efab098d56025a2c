import AdaptCore
import CommandLineKit
import Foundation
import Services

/// `adapt generate`: answer a prompt with the base model or a lineage's active adapter, streaming the text.
enum GenerateCommand {
    static let all: [Command] = [generate]


    static let generate = Command(
        "generate",
        summary: "answer a prompt with the base model or an adapter, streaming the text",
        discussion: """
            Give --model (a GGUF file; default state/models/\(DefaultModel.fileName)) and/or --lineage (its active \
            adapter from the registry; the base model when it has none). Sampling follows llama.cpp's default \
            chain: penalties, top-k, top-p, min-p, temperature, then a draw seeded by --seed. --compare answers \
            with the adapter first, then with the base model limited to as many tokens as the adapter used, and \
            prints both side by side. The base model stays in its file's types unless --base-weights f32; --json \
            adds "base_weights" to each answer.
            """,
        options: [model, lineage, adapter, prompt, system, maxTokens, temperature, topK, topP, minP, repeatPenalty,
                  presencePenalty, frequencyPenalty, seed, greedy, stop, enableThinking, ModelCommands.chatFormat, ModelCommands.threadsOption,
                  ModelCommands.baseWeights, swapRepeats, compare, .json]) { invocation in
            try await run(invocation)
        }

    static let model = Option<String?>("model", value: "M", help: "base model GGUF file")
    static let lineage = Option<String?>("lineage", value: "L", help: "use the lineage's active adapter from the registry")
    static let adapter = Option<String?>("adapter", value: "FILE", help: "an adapter file to attach instead of the lineage's")
    static let prompt = Option<String?>("prompt", value: "P", help: "the user's message (an empty text is valid)")
    static let system = Option<String?>("system", value: "S", help: "the system line (default: the chat template's own)")
    static let maxTokens = Option("max-tokens", default: 256, in: 0...1_000_000, help: "most tokens to generate")
    static let temperature = Option<Double?>("temperature", value: "T", help: "0 or less is greedy (default 0.8)")
    static let topK = Option<Int?>("top-k", value: "K", help: "keep the K most likely tokens, 0 = all (default 40)")
    static let topP = Option<Double?>("top-p", value: "P", help: "nucleus mass to keep (default 0.95)")
    static let minP = Option<Double?>("min-p", value: "P", help: "drop tokens below P × the best one's probability (default 0.05)")
    static let repeatPenalty = Option<Double?>("repeat-penalty", value: "R",
                                               help: "CTRL repetition penalty over the last 64 tokens (default 1 = off)")
    static let presencePenalty = Option<Double?>("presence-penalty", value: "P", help: "subtracted from tokens seen in the last 64 (default 0)")
    static let frequencyPenalty = Option<Double?>("frequency-penalty", value: "P", help: "subtracted per occurrence in the last 64 (default 0)")
    static let seed = Option<UInt64?>("seed", value: "S", default: nil,
                                      help: "seed of the draws: the same seed gives the same text (default 0)") { text in
        guard let seed = UInt64(text) else { throw UsageError("expects a non-negative integer, got '\(text)'") }
        return seed
    }
    static let greedy = Flag("greedy", help: "always the most likely token (temperature 0)")
    static let stop = Option<String?>("stop", value: "S", default: nil, repeats: true,
                                      help: "end the answer where this text appears (repeatable)") { $0 }
    static let enableThinking = Option("chat-template-enable-thinking", value: "true|false", default: true, defaultHelp: "true",
                                       help: "the template's thinking switch") { text in
        guard let value = Bool(text) else { throw UsageError("must be one of true, false, got '\(text)'") }
        return value
    }
    static let swapRepeats = Option("swap-repeats", default: 1, in: 1...10_000,
                                    help: "load and attach --adapter N times, printing each phase's median on stderr")
    static let compare = Flag("compare", help: "answer with the base model and the adapter, side by side")

    static func run(_ invocation: Invocation) async throws {
        let args = invocation.arguments
        guard let text = try args[prompt] else { throw UsageError("missing --prompt") }
        var request = Generation.Request(prompt: text)
        request.system = try args[system]
        request.lineage = try args[lineage]
        request.adapter = try args[adapter].map { URL(fileURLWithPath: $0) }
        request.model = try args[model].map { URL(fileURLWithPath: $0) }
        request.compare = args[compare]
        request.temperature = try args[temperature]
        request.topK = try args[topK]
        request.topP = try args[topP]
        request.minP = try args[minP]
        request.repeatPenalty = try args[repeatPenalty]
        request.presencePenalty = try args[presencePenalty]
        request.frequencyPenalty = try args[frequencyPenalty]
        request.seed = try args[seed]
        request.greedy = args[greedy]
        request.maxTokens = try args[maxTokens]
        request.stopStrings = try args.all(stop).compactMap { $0 }
        request.enableThinking = try args[enableThinking]
        request.chatFormat = try args[ModelCommands.chatFormat]
        request.threads = try ModelCommands.threads(args)
        request.baseWeights = try args[ModelCommands.baseWeights]
        request.swapRepeats = try args[swapRepeats]
        let json = args[.json]
        let outcome: Generation.Outcome
        do {
            outcome = try await Generation.run(request, state: try GlobalOptions.stateDirectory(invocation),
                                               database: { try GlobalOptions.database(invocation) },
                                               note: { Console.error("adapt: \($0)") },
                                               stream: { text in if !json { Console.write(text) } })
        } catch let error as Generation.RequestError {
            throw UsageError(error.message)
        }
        switch outcome {
        case let .answer(result):
            if json {
                Console.print(JSON.pretty(GenerationReport.ResultJSON(result, baseWeights: request.baseWeights)))
            } else {
                Console.write("\n")
                Console.error(GenerationReport.statistics(result))
            }
        case let .comparison(base, adapted, name):
            if json {
                Console.print(JSON.pretty(GenerationReport.ComparisonJSON(base: base, adapter: adapted, baseWeights: request.baseWeights)))
                return
            }
            let width = max(40, Int(ProcessInfo.processInfo.environment["COLUMNS"] ?? "") ?? 100)
            Console.print(SideBySide.render(left: ("base model", base.text), right: ("adapter \(name)", adapted.text),
                                            width: width))
            Console.error("base:    " + GenerationReport.statistics(base))
            Console.error("adapter: " + GenerationReport.statistics(adapted))
        }
    }
}
