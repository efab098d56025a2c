import AdaptCore
import CommandLineKit
import Foundation
import Services

/// `adapt model tiny`, `adapt model synth`, `adapt model inspect`, `adapt logits`, `adapt score`: running the model itself.
enum ModelCommands {
    static let all: [Command] = [tiny, synth, inspect, logits, score]

    static let model = Option<String?>("model", value: "FILE",
                                       help: "GGUF model (default: models/\(DefaultModel.fileName) in the state directory)")
    /// What --threads accepts wherever it is given (train's range).
    static let threadRange = ModelService.threadRange
    static let threadCount = Option<Int?>("threads", in: threadRange,
                                          help: "OpenBLAS threads, 1 to \(threadRange.upperBound) (this OpenBLAS's most; default: its own choice)")
    /// `--chat-format NAME`, wherever messages are formatted (required for a model without a chat template).
    static let chatFormat = Option<ChatConvention?>(
        "chat-format", value: "NAME", default: nil, defaultHelp: "the model's chat template",
        help: "turn format: plain (prompt and completion concatenated, for a base model without a template), chatml, llama3, gemma or phi3"
    ) { text in
        guard let convention = ChatConvention(rawValue: text) else {
            throw UsageError("must be one of \(ChatConvention.allCases.map(\.rawValue).joined(separator: ", ")), got '\(text)'")
        }
        return convention
    }
    /// `--base-weights`, wherever the model answers or scores (train has its own, which follows a checkpoint).
    static let baseWeights = Option(
        "base-weights", value: "quantized|f32", default: BaseWeightStorage.quantized, defaultHelp: "quantized",
        help: "keep the frozen model in its file's types (about the file's size in memory) or dequantized to f32 (4 bytes a weight; the last bits of the numbers differ)"
    ) { text in
        guard let storage = BaseWeightStorage(rawValue: text) else { throw UsageError("must be quantized or f32, got '\(text)'") }
        return storage
    }
    static var modelOption: OptionSpec { model.spec }
    static var threadsOption: OptionSpec { threadCount.spec }

    static let tiny = Command(
        "model tiny",
        summary: "write a tiny random-weight llama GGUF (2 blocks, width 64, byte-level BPE vocabulary) for tests and CI",
        options: [Tiny.out, Tiny.seed, Tiny.variant, Tiny.noChatTemplate]
    ) { invocation in
        let out = URL(fileURLWithPath: try invocation.arguments.required(Tiny.out))
        try OutputPath.check(out, option: "out", kind: .gguf, state: try GlobalOptions.hostState(invocation), inputs: [])
        try ModelService.writeTinyModel(seed: try invocation.arguments[Tiny.seed], variant: try invocation.arguments[Tiny.variant],
                                        chatTemplate: !invocation.arguments[Tiny.noChatTemplate], to: out)
        Console.error("wrote " + TerminalText.escaped(out.path))
    }

    static let synth = Command(
        "model synth",
        summary: "write an F16 GGUF with seeded random weights in the shape of a published model, for benchmarks",
        discussion: """
            The file has the published model's layers, widths, heads, head size, vocabulary size, RoPE base and \
            scaling, norm epsilon and tied embeddings (docs/model.md cites each configuration), every matrix in F16 \
            and the norms in F32, and a synthetic byte-level BPE vocabulary of the published size with a ChatML \
            template. How fast a model runs depends on these sizes and types, not on what the weights say; llama.cpp's \
            quantizer makes the Q4_K_M and Q8_0 files from it. --blocks and --vocabulary write a smaller file of the \
            same block shapes.
            """,
        options: [Synth.shape, Synth.out, Tiny.seed, Synth.blocks, Synth.vocabulary]
    ) { invocation in
        let arguments = invocation.arguments
        let out = URL(fileURLWithPath: try arguments.required(Synth.out))
        guard let shape = try arguments[Synth.shape] else {
            throw UsageError("--shape is required: one of \(ModelService.syntheticShapeNames.joined(separator: ", "))")
        }
        try OutputPath.check(out, option: "out", kind: .gguf, state: try GlobalOptions.hostState(invocation), inputs: [])
        let weights = try ModelService.writeSyntheticModel(shape: shape, seed: try arguments[Tiny.seed], blocks: try arguments[Synth.blocks],
                                                           vocabulary: try arguments[Synth.vocabulary], to: out)
        Console.error("wrote " + TerminalText.escaped(out.path) + " (\(shape) shape, \(weights) weights)")
    }

    static let inspect = Command(
        "model inspect",
        summary: "show a GGUF file's architecture, size, tensor types, tokenizer and whether it can be trained here",
        discussion: """
            The file is read, not loaded. What keeps it from loading here (an architecture, tokenizer or tensor \
            type this build does not support) is listed under unsupported rather than failing; a file that is not \
            a readable GGUF fails. training_memory_bytes estimates the peak memory of a default training run (256 \
            tokens, rank 8, the base kept quantized); training_memory_bytes_by_base_weights gives it for each --base-weights.
            --json prints {"architecture", "parameters", "tensor_types": {TYPE: count}, "tokenizer", \
            "chat_format", "context_length", "trainable", "training_memory_bytes", "training_memory_bytes_by_base_weights": \
            {quantized, f32}, "unsupported": [String]}.
            """,
        options: [.json],
        positionals: [PositionalSpec("FILE", help: "the GGUF model file")]
    ) { invocation in
        let inspection = try ModelService.inspect(URL(fileURLWithPath: try invocation.arguments.required("FILE")))
        if invocation.arguments.flag("json") {
            Console.print(JSON.canonicalString(inspection.json))
            return
        }
        let types = inspection.tensorTypes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        let memory = inspection.trainingMemoryByBaseWeights.isEmpty ? "unknown" : BaseWeightStorage.allCases.reversed().compactMap { storage in
            inspection.trainingMemoryByBaseWeights[storage].map { String(format: "%.0f MB", Double($0) / 1e6) + " (\(storage.rawValue) base)" }
        }.joined(separator: ", ")
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
        // Each part names what the file says (an architecture, a tokenizer, a type): its text, escaped.
        for part in inspection.unsupported { Console.error("unsupported: " + TerminalText.escaped(part)) }
    }

    static let logits = Command(
        "logits",
        summary: "show the largest logits of the next token after a prompt",
        discussion: """
            The prompt is tokenized with BOS only when the model asks for it (tokenizer.ggml.add_bos_token, as \
            llama.cpp does: Gemma yes, SmolLM2 no); --special lets it carry control tokens such as <|im_start|>.
            --json prints {"ids": [Int], "top": [{"id", "logit"}], "base_weights"} for the last position.
            """,
        options: [model, Logits.prompt, Logits.top, Logits.adapter, Logits.special, chatFormat, threadCount, baseWeights, .json]
    ) { invocation in
        let arguments = invocation.arguments
        let k = try arguments[Logits.top]
        let prompt = try arguments.required(Logits.prompt)
        let threads = try threads(arguments)
        let storage = try arguments[baseWeights]
        let (prompted, top): (ModelService.Tokens, [(id: Int, logit: Float)])
        do {
            (prompted, top) = try ModelService.logits(
                prompt: prompt, parseSpecial: arguments[Logits.special], top: k, model: try modelURL(invocation),
                adapter: try arguments[Logits.adapter].map { URL(fileURLWithPath: $0) }, threads: threads,
                chatFormat: try arguments[chatFormat], baseWeights: storage)
        } catch is ModelService.EmptyPrompt {
            throw UsageError("--prompt must give at least one token; it is empty")
        }
        let ids = prompted.ids
        if arguments[.json] {
            let document: JSONValue = .object([
                "ids": .array(ids.map { .int($0) }),
                "top": .array(top.map { .object(["id": .int($0.id), "logit": .double(Double($0.logit))]) }),
                "base_weights": .string(storage.rawValue),
            ])
            Console.print(JSON.canonicalString(document))
            return
        }
        var table = Table("RANK", "ID", "PIECE", "LOGIT")
        for (rank, entry) in top.enumerated() {
            table.append([String(rank + 1), String(entry.id), TokenizeCommands.visible(try prompted.piece(entry.id)),
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
            With an empty prompt (and a model that adds no BOS) the first completion token has no context and is not scored.
            --json prints {"prompt_ids", "completion_ids", "logprobs": [Double], "mean_nll", "base_weights"} (mean_nll \
            is null when no token is scored).
            """,
        options: [model, Score.prompt, Score.completion, Score.adapter, Score.chat, Score.special, chatFormat, threadCount,
                  baseWeights, .json]
    ) { invocation in
        let arguments = invocation.arguments
        let prompt = try arguments.required(Score.prompt)
        let completion = try arguments.required(Score.completion)
        let storage = try arguments[baseWeights]
        let scored = try ModelService.score(
            prompt: prompt, completion: completion, chat: arguments[Score.chat], parseSpecial: arguments[Score.special],
            model: try modelURL(invocation), adapter: try arguments[Score.adapter].map { URL(fileURLWithPath: $0) },
            threads: try threads(arguments), chatFormat: try arguments[chatFormat], baseWeights: storage)
        let (promptIDs, completionIDs, logprobs, meanNLL) = (scored.prompt.ids, scored.completion.ids, scored.logprobs, scored.meanNLL)
        if arguments[.json] {
            let document: JSONValue = .object([
                "prompt_ids": .array(promptIDs.map { .int($0) }),
                "completion_ids": .array(completionIDs.map { .int($0) }),
                "logprobs": .array(logprobs.map { .double($0) }),
                "mean_nll": meanNLL.map { .double($0) } ?? .null,
                "base_weights": .string(storage.rawValue),
            ])
            Console.print(JSON.canonicalString(document))
            return
        }
        var table = Table("ID", "PIECE", "LOGPROB")
        for (id, lp) in zip(completionIDs.suffix(logprobs.count), logprobs) {
            table.append([String(id), TokenizeCommands.visible(try scored.completion.piece(id)), String(format: "%.4f", lp)])
        }
        Console.print(table.render())
        Console.print("mean NLL: " + (meanNLL.map { String(format: "%.4f", $0) } ?? "none (no token scored)"))
        Console.error("\(promptIDs.count) prompt tokens, \(completionIDs.count) completion tokens")
    }

    /// The options of `model tiny`.
    enum Tiny {
        static let out = Option<String?>("out", value: "FILE", help: "where to write the .gguf file (an existing GGUF file there is replaced)")
        static let seed = Option("seed", value: "S", default: UInt64(0), defaultHelp: "0", help: "weight seed") { text in
            guard let seed = UInt64(text) else { throw UsageError("expects a non-negative integer, got '\(text)'") }
            return seed
        }
        static let noChatTemplate = Flag("no-chat-template", help: "write no chat template, as a base model has none")
        static let variant = Option("variant", value: "NAME", default: "llama", defaultHelp: "llama",
                                    help: "architecture variant: \(ModelService.tinyModelVariants.joined(separator: ", "))") { text in
            guard ModelService.tinyModelVariants.contains(text) else {
                throw UsageError("expects one of \(ModelService.tinyModelVariants.joined(separator: ", ")), got '\(text)'")
            }
            return text
        }
    }

    /// The options of `model synth`.
    enum Synth {
        static let shape = Option<String?>("shape", value: "NAME", default: nil,
                                           help: "the published shape: \(ModelService.syntheticShapeNames.joined(separator: ", "))") { text in
            guard ModelService.syntheticShapeNames.contains(text) else {
                throw UsageError("expects one of \(ModelService.syntheticShapeNames.joined(separator: ", ")), got '\(text)'")
            }
            return text
        }
        static let out = Option<String?>("out", value: "FILE", help: "where to write the .gguf file (an existing GGUF file there is replaced)")
        static let blocks = Option<Int?>("blocks", in: 1...1024, help: "write this many blocks instead of the shape's (a smaller file for tests)")
        static let vocabulary = Option<Int?>(
            "vocabulary", in: ModelService.syntheticVocabularyMinimum...1_000_000,
            help: "tokens in the vocabulary instead of the shape's, at least \(ModelService.syntheticVocabularyMinimum) (a smaller file for tests)")
    }

    /// The options of `logits`.
    enum Logits {
        static let prompt = Option<String?>("prompt", value: "TEXT", help: "the prompt (must give at least one token)")
        static let top = Option("top", value: "K", default: 10, in: 1...1_000_000, help: "how many logits to show")
        static let adapter = Option<String?>("adapter", value: "FILE", help: "apply this LoRA adapter file (checked against the model)")
        static let special = Flag("special", help: "match control tokens such as <|im_start|> in the prompt")
    }

    /// The options of `score`.
    enum Score {
        static let prompt = Option<String?>("prompt", value: "TEXT", help: "the prompt")
        static let completion = Option<String?>("completion", value: "TEXT", help: "the completion to score")
        static let adapter = Option<String?>("adapter", value: "FILE", help: "score with this LoRA adapter file applied (checked against the model)")
        static let chat = Flag("chat", help: "format the prompt as a user turn of the model's chat template")
        static let special = Flag("special", help: "match control tokens such as <|im_start|> in prompt and completion")
    }

    static func modelURL(_ invocation: Invocation) throws -> URL {
        try ModelService.modelURL(given: try invocation.arguments[model], state: try GlobalOptions.stateDirectory(invocation),
                                  fetchHint: false)
    }

    /// --threads when given, within `threadRange` (train's bound: each is a thread the system must start).
    static func threads(_ arguments: ParsedArguments) throws -> Int? {
        try arguments[threadCount]
    }
}
