import AdaptCore
import Adapters
import CommandLineKit
import Foundation
import Inference
import Model
import Registry

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
            prints both side by side.
            """,
        options: [
            OptionSpec("model", value: "M", help: "base model GGUF file"),
            OptionSpec("lineage", value: "L", help: "use the lineage's active adapter from the registry"),
            OptionSpec("adapter", value: "FILE", help: "an adapter file to attach instead of the lineage's"),
            OptionSpec("prompt", value: "P", help: "the user's message (an empty text is valid)"),
            OptionSpec("system", value: "S", help: "the system line (default: the chat template's own)"),
            OptionSpec("max-tokens", value: "N", help: "most tokens to generate (default 256)"),
            OptionSpec("temperature", value: "T", help: "0 or less is greedy (default 0.8)"),
            OptionSpec("top-k", value: "K", help: "keep the K most likely tokens, 0 = all (default 40)"),
            OptionSpec("top-p", value: "P", help: "nucleus mass to keep (default 0.95)"),
            OptionSpec("min-p", value: "P", help: "drop tokens below P × the best one's probability (default 0.05)"),
            OptionSpec("repeat-penalty", value: "R", help: "CTRL repetition penalty over the last 64 tokens (default 1 = off)"),
            OptionSpec("presence-penalty", value: "P", help: "subtracted from tokens seen in the last 64 (default 0)"),
            OptionSpec("frequency-penalty", value: "P", help: "subtracted per occurrence in the last 64 (default 0)"),
            OptionSpec("seed", value: "S", help: "seed of the draws: the same seed gives the same text (default 0)"),
            .flag("greedy", help: "always the most likely token (temperature 0)"),
            OptionSpec("stop", value: "S", repeats: true, help: "end the answer where this text appears (repeatable)"),
            OptionSpec("chat-template-enable-thinking", value: "true|false", help: "the template's thinking switch (default true)"),
            ModelCommands.threadsOption,
            OptionSpec("swap-repeats", value: "N",
                       help: "load and attach --adapter N times, printing each phase's median on stderr (default 1)"),
            .flag("compare", help: "answer with the base model and the adapter, side by side"),
            .json,
        ]) { invocation in
            try await run(invocation)
        }

    static func run(_ invocation: Invocation) async throws {
        let args = invocation.arguments
        guard let prompt = args.string("prompt") else { throw UsageError("missing --prompt") }
        let lineage = args.string("lineage")
        let compare = args.flag("compare")
        let json = args.flag("json")
        let options = try generationOptions(args)
        if let threads = try ModelCommands.threads(args) { try BLAS.setThreads(threads) }
        if compare, lineage == nil, args.string("adapter") == nil { throw GenerateError.nothingToCompare }
        if let lineage, ShortIdentifier(lineage) == nil {
            throw UsageError("--lineage must be 1 to 64 letters, digits, '.', '_' or '-'")
        }

        let state = try GlobalOptions.stateDirectory(invocation)
        let modelURL = args.string("model").map { URL(fileURLWithPath: $0) }
            ?? state.defaultModel
        let base = try BaseModel.load(modelURL)
        var catalog: RegistryAdapterCatalog?
        if lineage != nil {
            catalog = RegistryAdapterCatalog(registry: try AdapterRegistry(database: try GlobalOptions.database(invocation),
                                                                           blobs: state.blobs))
        }
        let session = base.session(catalog: catalog)

        var messages: [ChatMessage] = []
        if let system = args.string("system") { messages.append(.system(system)) }
        messages.append(.user(prompt))

        if let file = args.string("adapter") {
            let repeats = try args.int("swap-repeats", default: 1, in: 1...10_000)
            let timing = try await timedSwap(URL(fileURLWithPath: file), into: session, repeats: repeats)
            Console.error(timing)
        } else if let lineage {
            switch try await session.attach(lineage: lineage) {
            case let .base(reason): Console.error("adapt: \(reason ?? "generating with the base model")")
            case let .adapter(name, digest, _, _): Console.error("adapt: generating with adapter \(name) (\(digest.short))")
            }
        }

        if compare {
            try await runComparison(session, messages: messages, options: options, json: json)
            return
        }
        let streaming = !json
        let result = try await session.generate(.chat(messages), options: options) { text in
            if streaming { Console.write(text) }
        }
        if json {
            Console.print(JSON.pretty(ResultJSON(result)))
        } else {
            Console.write("\n")
            Console.error(statistics(result))
        }
    }

    /// Loads and attaches the adapter file `repeats` times, timing each phase of a hot swap (for
    /// scripts/bench/generate): reading the file, verifying its digest, decoding its tensors into LoRA weights,
    /// attaching them. Returns the line of medians; the adapter stays attached.
    static func timedSwap(_ url: URL, into session: InferenceSession<LlamaBackend>, repeats: Int) async throws -> String {
        let clock = ContinuousClock()
        var phases: [[Double]] = Array(repeating: [], count: 4)
        var name = url.lastPathComponent
        for run in 0..<repeats {
            if run > 0 { await session.detach() }
            let start = clock.now
            let data = try AdapterFile.readBytes(from: url)
            let read = clock.now
            let verified = try AdapterFile.verify(data, name: url.lastPathComponent)
            let checked = clock.now
            let bundle = try AdapterBundle(file: try AdapterFile.decode(verified), digest: verified.digest, name: verified.name)
            let decoded = clock.now
            try await session.attach(bundle)
            let attached = clock.now
            name = bundle.name
            for (i, span) in [read - start, checked - read, decoded - checked, attached - decoded].enumerated() {
                phases[i].append(seconds(span) * 1000)
            }
        }
        let medians = phases.map { values in values.sorted()[values.count / 2] }
        // The first swap of a process also pays for touching fresh memory; later ones reuse freed pages.
        let first = phases.map { $0[0] }.reduce(0, +)
        func f(_ x: Double) -> String { String(format: "%.3f", x) }
        return "adapt: adapter \(name) read in \(f(medians[0])) ms, verified in \(f(medians[1])) ms, "
            + "decoded in \(f(medians[2])) ms, attached in \(f(medians[3])) ms, total \(f(medians.reduce(0, +))) ms "
            + "(median of \(repeats); the first swap \(f(first)) ms)"
    }

    static func seconds(_ d: Duration) -> Double {
        let (seconds, attoseconds) = d.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The adapter answers first; the base model then gets the adapter's answer length as its limit.
    static func runComparison(_ session: InferenceSession<LlamaBackend>, messages: [ChatMessage],
                              options: GenerationOptions, json: Bool) async throws {
        let attached = await session.attached
        guard case let .adapter(name, _, _, _) = attached else {
            throw GenerateError.nothingToCompare
        }
        let adapted = try await session.generate(.chat(messages), options: options)
        await session.detach()
        var baseOptions = options
        baseOptions.maxTokens = min(options.maxTokens, max(1, adapted.generatedTokens))
        let base = try await session.generate(.chat(messages), options: baseOptions)
        if json {
            Console.print(JSON.pretty(ComparisonJSON(base: ResultJSON(base), adapter: ResultJSON(adapted))))
            return
        }
        let width = max(40, Int(ProcessInfo.processInfo.environment["COLUMNS"] ?? "") ?? 100)
        Console.print(SideBySide.render(left: ("base model", base.text), right: ("adapter \(name)", adapted.text),
                                        width: width))
        Console.error("base:    " + statistics(base))
        Console.error("adapter: " + statistics(adapted))
    }

    static func generationOptions(_ args: ParsedArguments) throws -> GenerationOptions {
        var options = GenerationOptions()
        var sampling = SamplingOptions()
        if let v = try args.double("temperature") { sampling.temperature = Float(v) }
        if let v = try args.int("top-k") { sampling.topK = v }
        if let v = try args.double("top-p") { sampling.topP = Float(v) }
        if let v = try args.double("min-p") { sampling.minP = Float(v) }
        if let v = try args.double("repeat-penalty") { sampling.repeatPenalty = Float(v) }
        if let v = try args.double("presence-penalty") { sampling.presencePenalty = Float(v) }
        if let v = try args.double("frequency-penalty") { sampling.frequencyPenalty = Float(v) }
        if let text = args.string("seed") {
            guard let seed = UInt64(text) else { throw UsageError("--seed expects a non-negative integer, got '\(text)'") }
            sampling.seed = seed
        }
        if args.flag("greedy") { sampling.temperature = 0 }
        do { try sampling.validate() } catch { throw UsageError("\(error)") }
        options.sampling = sampling
        options.maxTokens = try args.int("max-tokens", default: 256, in: 0...1_000_000)
        options.stopStrings = args.strings("stop")
        switch try args.choice("chat-template-enable-thinking", ["true", "false"]) {
        case "false": options.enableThinking = false
        default: options.enableThinking = true
        }
        return options
    }

    static func statistics(_ r: GenerationResult) -> String {
        func f(_ x: Double) -> String { String(format: "%.1f", x) }
        return "prompt \(r.promptTokens) tokens (\(r.cachedTokens) cached) in \(f(r.promptMilliseconds)) ms; "
            + "\(r.generatedTokens) tokens in \(f(r.generationMilliseconds)) ms, \(f(r.tokensPerSecond)) tokens/s; "
            + "ended by \(r.finishReason.rawValue)"
    }

    /// DESIGN.md's `generate` document, exactly these fields.
    struct ResultJSON: Encodable {
        let text: String
        let token_ids: [Int32]
        let prompt_tokens: Int
        let cached_tokens: Int
        let generated_tokens: Int
        let prompt_ms: Double
        let generation_ms: Double
        let tokens_per_second: Double

        init(_ r: GenerationResult) {
            text = r.text
            token_ids = r.tokenIDs
            prompt_tokens = r.promptTokens
            cached_tokens = r.cachedTokens
            generated_tokens = r.generatedTokens
            prompt_ms = (r.promptMilliseconds * 1000).rounded() / 1000
            generation_ms = (r.generationMilliseconds * 1000).rounded() / 1000
            tokens_per_second = (r.tokensPerSecond * 1000).rounded() / 1000
        }
    }

    struct ComparisonJSON: Encodable {
        let base: ResultJSON
        let adapter: ResultJSON
    }
}

/// Failures of `adapt generate` that are not the session's.
enum GenerateError: Error, CustomStringConvertible {
    case nothingToCompare

    var description: String {
        switch self {
        case .nothingToCompare:
            return "--compare needs an adapter: give --adapter FILE, or a --lineage that has an active version"
        }
    }
}
