import AdaptCore
import CommandLineKit
import Foundation
import Inference
import Model

/// `adapt model tiny`, `adapt model inspect`, `adapt logits`, `adapt score`: running the model itself.
enum ModelCommands {
    static let all: [Command] = [tiny, inspect, logits, score, bench]

    static let modelOption = OptionSpec("model", value: "FILE",
                                        help: "GGUF model (default: models/\(DefaultModel.fileName) in the state directory)")
    static let threadsOption = OptionSpec("threads", value: "N", help: "OpenBLAS threads, 1 to 256 (default: OpenBLAS's own choice)")
    /// What --threads accepts wherever it is given (train's range).
    static let threadRange = 1...BLAS.maximumThreads

    static let tiny = Command(
        "model tiny",
        summary: "write a tiny random-weight llama GGUF (2 blocks, width 64, byte-level BPE vocabulary) for tests and CI",
        options: [
            OptionSpec("out", value: "FILE", help: "where to write the .gguf file (an existing file there is replaced)"),
            OptionSpec("seed", value: "S", help: "weight seed (default 0)"),
        ]
    ) { invocation in
        let out = URL(fileURLWithPath: try invocation.arguments.required("out"))
        let seedText = invocation.arguments.string("seed") ?? "0"
        guard let seed = UInt64(seedText) else { throw UsageError("--seed expects a non-negative integer, got '\(seedText)'") }
        try TinyModel(seed: seed).write(to: out)
        Console.error("wrote \(out.path)")
    }

    static let inspect = Command(
        "model inspect",
        summary: "show a GGUF file's architecture, size, tensor types, tokenizer and whether it can be trained here",
        discussion: """
            The file is read, not loaded. What keeps it from loading here (an architecture, tokenizer or tensor \
            type this build does not support) is listed under unsupported rather than failing; a file that is not \
            a readable GGUF fails. training_memory_bytes estimates the peak memory of a default training run.
            --json prints {"architecture", "parameters", "tensor_types": {TYPE: count}, "tokenizer", \
            "chat_format", "context_length", "trainable", "training_memory_bytes", "unsupported": [String]}.
            """,
        options: [.json],
        positionals: [PositionalSpec("FILE", help: "the GGUF model file")]
    ) { invocation in
        let inspection = try ModelInspection(url: URL(fileURLWithPath: try invocation.arguments.required("FILE")))
        if invocation.arguments.flag("json") {
            Console.print(JSON.canonicalString(inspection.json))
            return
        }
        let types = inspection.tensorTypes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        let memory = inspection.trainingMemoryBytes.map { String(format: "%.0f MB", Double($0) / 1e6) } ?? "unknown"
        var table = Table("FIELD", "VALUE")
        table.append(["architecture", inspection.architecture ?? "none"])
        table.append(["parameters", String(inspection.parameters)])
        table.append(["tensor types", types])
        table.append(["tokenizer", inspection.tokenizer ?? "none"])
        table.append(["chat format", inspection.chatFormat ?? "none recognised"])
        table.append(["context length", inspection.contextLength.map(String.init) ?? "unknown"])
        table.append(["trainable", inspection.trainable ? "yes" : "no"])
        table.append(["training memory", memory])
        Console.print(table.render())
        for part in inspection.unsupported { Console.error("unsupported: \(part)") }
    }

    static let logits = Command(
        "logits",
        summary: "show the largest logits of the next token after a prompt",
        discussion: """
            The prompt is tokenized without BOS; --special lets it carry control tokens such as <|im_start|>.
            --json prints {"ids": [Int], "top": [{"id", "logit"}]} for the last position.
            """,
        options: [
            modelOption,
            OptionSpec("prompt", value: "TEXT", help: "the prompt (must give at least one token)"),
            OptionSpec("top", value: "K", help: "how many logits to show (default 10)"),
            OptionSpec("adapter", value: "FILE", help: "apply this LoRA adapter file (checked against the model)"),
            .flag("special", help: "match control tokens such as <|im_start|> in the prompt"),
            threadsOption,
            .json,
        ]
    ) { invocation in
        let arguments = invocation.arguments
        let k = try arguments.int("top", default: 10, in: 1...1_000_000)
        let prompt = try arguments.required("prompt")
        try setThreads(invocation)
        let base = try BaseModel.load(try modelURL(invocation))
        let (model, tokenizer) = (base.model, base.tokenizer)
        let lora = try arguments.string("adapter").map { try base.adapter(at: URL(fileURLWithPath: $0)).weights }
        let ids = tokenizer.encode(prompt, parseSpecial: arguments.flag("special"))
        guard !ids.isEmpty else { throw UsageError("--prompt must give at least one token; it is empty") }
        try requireContext(ids.count, "the prompt is", model)
        var cache = KVCache()
        let logits = model.forward(tokens: ids, lora: lora, cache: &cache)
        try LlamaModel.requireFinite(logits)
        let top = LlamaModel.top(k, of: logits)
        if arguments.flag("json") {
            let document: JSONValue = .object([
                "ids": .array(ids.map { .int($0) }),
                "top": .array(top.map { .object(["id": .int($0.id), "logit": .double(Double($0.logit))]) }),
            ])
            Console.print(JSON.canonicalString(document))
            return
        }
        var table = Table("RANK", "ID", "PIECE", "LOGIT")
        for (rank, entry) in top.enumerated() {
            table.append([String(rank + 1), String(entry.id), TokenizeCommands.visible(try tokenizer.piece(entry.id)),
                          String(format: "%.4f", entry.logit)])
        }
        Console.print(table.render())
        Console.error("\(ids.count) prompt tokens")
    }

    static let score = Command(
        "score",
        summary: "score a completion under teacher forcing: per-token log-probabilities and mean negative log-likelihood",
        discussion: """
            Prompt and completion are tokenized separately and concatenated, the boundary training uses. --chat \
            formats the prompt as a user turn with the model's chat template, followed by the assistant opening. \
            With an empty prompt the first completion token has no context and is not scored.
            --json prints {"prompt_ids", "completion_ids", "logprobs": [Double], "mean_nll"} (mean_nll is null \
            when no token is scored).
            """,
        options: [
            modelOption,
            OptionSpec("prompt", value: "TEXT", help: "the prompt"),
            OptionSpec("completion", value: "TEXT", help: "the completion to score"),
            OptionSpec("adapter", value: "FILE", help: "score with this LoRA adapter file applied (checked against the model)"),
            .flag("chat", help: "format the prompt as a user turn of the model's chat template"),
            .flag("special", help: "match control tokens such as <|im_start|> in prompt and completion"),
            threadsOption,
            .json,
        ]
    ) { invocation in
        let arguments = invocation.arguments
        let prompt = try arguments.required("prompt")
        let completion = try arguments.required("completion")
        try setThreads(invocation)
        let base = try BaseModel.load(try modelURL(invocation))
        let (model, tokenizer) = (base.model, base.tokenizer)
        let lora = try arguments.string("adapter").map { try base.adapter(at: URL(fileURLWithPath: $0)).weights }
        let special = arguments.flag("special")
        var promptText = prompt
        if arguments.flag("chat") {
            promptText = try base.formatter.format([.user(prompt)], addGenerationPrompt: true)
        }
        // A formatted prompt carries the template's control tokens, which must be matched as such.
        let promptIDs = tokenizer.encode(promptText, parseSpecial: special || arguments.flag("chat"))
        let completionIDs = tokenizer.encode(completion, parseSpecial: special)
        try requireContext(promptIDs.count + completionIDs.count, "the prompt and completion are", model)
        let logprobs = model.logProbabilities(of: completionIDs, after: promptIDs, lora: lora)
        // A non-finite logit makes its row's log-probability non-finite, so checking these checks the logits.
        try LlamaModel.requireFinite(logprobs)
        let meanNLL: Double? = logprobs.isEmpty ? nil : -logprobs.reduce(0, +) / Double(logprobs.count)
        if arguments.flag("json") {
            let document: JSONValue = .object([
                "prompt_ids": .array(promptIDs.map { .int($0) }),
                "completion_ids": .array(completionIDs.map { .int($0) }),
                "logprobs": .array(logprobs.map { .double($0) }),
                "mean_nll": meanNLL.map { .double($0) } ?? .null,
            ])
            Console.print(JSON.canonicalString(document))
            return
        }
        var table = Table("ID", "PIECE", "LOGPROB")
        let scored = Array(completionIDs.suffix(logprobs.count))
        for (id, lp) in zip(scored, logprobs) {
            table.append([String(id), TokenizeCommands.visible(try tokenizer.piece(id)), String(format: "%.4f", lp)])
        }
        Console.print(table.render())
        Console.print("mean NLL: " + (meanNLL.map { String(format: "%.4f", $0) } ?? "none (no token scored)"))
        Console.error("\(promptIDs.count) prompt tokens, \(completionIDs.count) completion tokens")
    }

    static let bench = Command(
        "model bench",
        summary: "measure model load time, prompt processing and single-token decode speed",
        discussion: """
            Feeds a fixed prompt of --prompt-tokens ids in one batch, then decodes --decode-tokens tokens one at a \
            time (greedy) on the KV cache, --repeat times; reports the best of the repeats.
            --json prints {"threads", "load_ms", "prompt_tokens", "prompt_tokens_per_second", "decode_tokens", \
            "decode_tokens_per_second", "weight_bytes", "peak_rss_bytes"}; with --train-tokens also "train_tokens", \
            "train_tokens_per_second" (fastest repeat, wall clock), "train_cpu_seconds" (the process's CPU time of \
            each repeat, all BLAS threads included: on a shared machine it moves far less than wall time) and \
            "train_dropout".
            """,
        options: [
            modelOption, threadsOption,
            OptionSpec("prompt-tokens", value: "N", help: "prompt length (default 256)"),
            OptionSpec("decode-tokens", value: "N", help: "tokens to decode (default 64)"),
            OptionSpec("repeat", value: "N", help: "repetitions; the fastest counts (default 3)"),
            .flag("f32-decode", help: "decode from the f32 weights (sgemv) instead of the quantized blocks"),
            OptionSpec("train-tokens", value: "N", help: "also time one LoRA loss-and-gradients pass (rank 8, q/k/v/o) over N tokens"),
            OptionSpec("train-dropout", value: "P", help: "LoRA dropout of the timed training pass (default 0.05)"),
            .json,
        ]
    ) { invocation in
        let arguments = invocation.arguments
        let promptCount = try arguments.int("prompt-tokens", default: 256, in: 1...100_000)
        let decodeCount = try arguments.int("decode-tokens", default: 64, in: 1...100_000)
        let repeats = try arguments.int("repeat", default: 3, in: 1...100)
        let trainTokens = try arguments.int("train-tokens")
        if let trainTokens, trainTokens < 2 { throw UsageError("--train-tokens must be at least 2, got \(trainTokens)") }
        let dropout = try arguments.double("train-dropout") ?? 0.05
        guard dropout >= 0, dropout < 1 else { throw UsageError("--train-dropout must be in [0, 1), got \(dropout)") }
        // The lengths are checked against the context before the weights are dequantized: a pass's attention
        // scores grow with the square of its length, so an unbounded one ends in a failed allocation.
        try setThreads(invocation)
        let file = try GGUFFile(url: try modelURL(invocation))
        let context = try LlamaModel.Hyperparameters(file: file).contextLength
        guard promptCount + decodeCount <= context else {
            throw UsageError("--prompt-tokens \(promptCount) and --decode-tokens \(decodeCount) fill \(promptCount + decodeCount) "
                             + "positions but the model's context holds \(context); lower them")
        }
        if let trainTokens, trainTokens > context {
            throw UsageError("--train-tokens is \(trainTokens) but the model's context holds \(context); lower it")
        }
        let start = DispatchTime.now().uptimeNanoseconds
        let model = try LlamaModel(file: file, quantizedDecode: !arguments.flag("f32-decode"))
        let loadMS = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        let V = model.hyperparameters.vocabularySize
        let prompt = (0..<promptCount).map { ($0 * 7919 + 13) % V }
        var bestPrompt = Double.infinity, bestDecode = Double.infinity
        for _ in 0..<repeats {
            var cache = KVCache()
            let t0 = DispatchTime.now().uptimeNanoseconds
            var logits = model.forward(tokens: prompt, cache: &cache)
            let t1 = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<decodeCount {
                let next = LlamaModel.top(1, of: logits)[0].id
                logits = model.forward(tokens: [next], cache: &cache)
            }
            let t2 = DispatchTime.now().uptimeNanoseconds
            bestPrompt = min(bestPrompt, Double(t1 - t0) / 1e9)
            bestDecode = min(bestDecode, Double(t2 - t1) / 1e9)
        }
        var result: [String: JSONValue] = [
            "threads": .int(BLAS.threads),
            "load_ms": .double(loadMS),
            "prompt_tokens": .int(promptCount),
            "prompt_tokens_per_second": .double(Double(promptCount) / bestPrompt),
            "decode_tokens": .int(decodeCount),
            "decode_tokens_per_second": .double(Double(decodeCount) / bestDecode),
            "weight_bytes": .int(model.weightBytes),
            "peak_rss_bytes": .int(peakResidentBytes()),
        ]
        if let trainTokens {
            let tokens = (0..<trainTokens).map { ($0 * 7919 + 13) % V }
            let sequence = TrainingSequence(tokens: tokens, weights: [Float](repeating: 1, count: trainTokens - 1))
            let lora = LoRAParameters.initialized(for: model, config: LoRAConfig(rank: 8, alpha: 16, dropout: Float(dropout)), seed: 1)
            var best = Double.infinity
            var cpuSeconds: [Double] = []
            for step in 0..<repeats {
                let t0 = DispatchTime.now().uptimeNanoseconds
                let c0 = processCPUSeconds()
                _ = try model.lossAndGradients([sequence], lora: lora, dropoutSeed: 1, step: UInt64(step))
                cpuSeconds.append(processCPUSeconds() - c0)
                best = min(best, Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9)
            }
            result["train_tokens"] = .int(trainTokens)
            result["train_tokens_per_second"] = .double(Double(trainTokens) / best)
            result["train_cpu_seconds"] = .array(cpuSeconds.map { .double($0) })
            result["train_dropout"] = .double(dropout)
            result["peak_rss_bytes"] = .int(peakResidentBytes())
            if !arguments.flag("json") {
                let cpu = cpuSeconds.map { String(format: "%.3f", $0) }.joined(separator: ", ")
                Console.print(String(format: "train: %.1f tokens/s (%d tokens, rank 8, q/k/v/o, dropout %g), ", Double(trainTokens) / best, trainTokens, dropout)
                              + "CPU s per pass \(cpu), " + String(format: "peak RSS %.0f MB", Double(peakResidentBytes()) / 1e6))
            }
        }
        if arguments.flag("json") {
            Console.print(JSON.canonicalString(JSONValue.object(result)))
        } else {
            Console.print(String(format: "threads %d, load %.0f ms, prompt %.1f tokens/s (%d tokens), decode %.1f tokens/s, peak RSS %.0f MB",
                                 BLAS.threads, loadMS, Double(promptCount) / bestPrompt, promptCount,
                                 Double(decodeCount) / bestDecode, Double(peakResidentBytes()) / 1e6))
        }
    }

    /// CPU seconds the whole process has used (every thread, OpenBLAS's included).
    static func processCPUSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    /// The process's peak resident set (VmHWM in /proc/self/status), 0 where unavailable.
    static func peakResidentBytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let kb = line.split(separator: " ").compactMap { Int($0) }.first ?? 0
            return kb * 1024
        }
        return 0
    }

    static func modelURL(_ invocation: Invocation) throws -> URL {
        let defaultModel = try GlobalOptions.stateDirectory(invocation).defaultModel
        let url = invocation.arguments.string("model").map { URL(fileURLWithPath: $0) } ?? defaultModel
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw ModelError.fileUnreadable(path: url.path, reason: "no such file")
        }
        return url
    }

    /// Throws unless `count` tokens fit in the model's context (what `generate` checks for its prompt).
    static func requireContext(_ count: Int, _ what: String, _ model: LlamaModel) throws {
        let context = model.hyperparameters.contextLength
        guard count <= context else { throw ModelError.contextExceeded(what: what, tokens: count, contextLength: context) }
    }

    /// --threads when given, within `threadRange` (train's bound: each is a thread the system must start).
    static func threads(_ arguments: ParsedArguments) throws -> Int? {
        guard arguments.has("threads") else { return nil }
        return try arguments.int("threads", default: 1, in: threadRange)
    }

    static func setThreads(_ invocation: Invocation) throws {
        if let threads = try threads(invocation.arguments) { try BLAS.setThreads(threads) }
    }

    /// The model and its tokenizer from one mapping of the file; sets the BLAS thread count if asked.
    static func load(_ invocation: Invocation, quantizedDecode: Bool = true) throws -> (LlamaModel, Tokenizer) {
        try setThreads(invocation)
        let file = try GGUFFile(url: try modelURL(invocation))
        return (try LlamaModel(file: file, quantizedDecode: quantizedDecode), try Tokenizer(gguf: file))
    }
}
