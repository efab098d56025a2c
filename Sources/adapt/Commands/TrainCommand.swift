import AdaptCore
import CommandLineKit
import Foundation
import Services

/// `adapt train`: LoRA training on a JSON Lines file, standalone, with checkpoints and `--resume`.
enum TrainCommands {
    static let all: [Command] = [train]

    static let train = Command(
        "train",
        summary: "train a LoRA adapter on {prompt, completion[, weight]} lines, checkpointing as it goes",
        discussion: """
            Each prompt is formatted as a user turn through the model's chat template (a model without one, such \
            as a base model, needs --chat-format plain: prompt and completion concatenated); the loss is the weighted
            cross-entropy of the completion (and its end-of-turn marker) only. Checkpoints go to
            ADAPTER.checkpoints/ (or --checkpoint-dir); --resume continues from the newest valid one and ends
            with exactly the weights and loss curve an uninterrupted run would have. --init-adapter starts from an
            adapter's weights instead of a fresh initialisation; it must have been trained on the same model with
            the same rank, alpha, targets and chat template. Progress goes to stderr: a live line on a terminal,
            JSON lines otherwise.
            """,
        options: [O.data, O.model, O.out, O.steps, O.rank, O.alpha, O.dropout, O.targets, O.learningRate, O.batchSize,
                  O.gradientAccumulation, O.maxLength, O.checkpointEvery, O.checkpointDirectory, O.heldOut, O.evalEvery,
                  O.patience, O.seed, O.threads, O.baseWeights, O.forwardProducts, O.initAdapter, O.resume, ModelCommands.chatFormat,
                  .json]
    ) { invocation in
        try run(invocation)
    }

    /// A default as the help shows it: 16, 0.05, 0.0005.
    static func number(_ value: Double) -> String { String(format: "%g", value) }

    /// The options of `train`, each with its default (the shared `TrainingDefaults` where the nightly run
    /// uses the same value).
    enum O {
        static let data = Option<String?>("data", value: "FILE", help: "JSON Lines of {\"prompt\", \"completion\"[, \"weight\"]}")
        static let model = Option<String?>("model", value: "GGUF", help: "base model file (or a name in the state's models/)")
        static let out = Option<String?>("out", value: "ADAPTER", help: "where to write the adapter file (an earlier adapter file there is replaced; never the --model, --data or --held-out file)")
        static let steps = Option("steps", default: TrainingDefaults.steps, in: 1...10_000_000, help: "optimizer steps")
        static let rank = Option("rank", value: "R", default: TrainingDefaults.rank, in: 1...1024, help: "LoRA rank")
        static let alpha = Option("alpha", value: "A", default: TrainingDefaults.alpha,
                                  defaultHelp: number(TrainingDefaults.alpha), help: "LoRA alpha") { text in
            let value = try OptionParsing.number(text)
            guard value > 0 else { throw UsageError("must be positive, got \(Float(value))") }
            return value
        }
        static let dropout = Option("dropout", value: "P", default: TrainingDefaults.dropout,
                                    defaultHelp: number(TrainingDefaults.dropout), help: "LoRA dropout") { text in
            let value = try OptionParsing.number(text)
            guard value >= 0, Float(value) < 1 else { throw UsageError("must be in [0, 1), got \(Float(value))") }
            return value
        }
        static let targets = Option<[Projection]?>("targets", value: "q,k,v,o", default: nil, defaultHelp: "q,k,v,o",
                                                   help: "projections to adapt: q,k,v,o,gate,up,down (on phi3 any of q,k,v adapts its fused qkv, gate or up its gate_up)") { text in
            let names = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            let targets = try names.map { name in
                guard let projection = Projection(rawValue: name) else {
                    throw UsageError("names an unknown projection '\(name)'; use q, k, v, o, gate, up, down (qkv, gate_up for phi3's fused tensors)")
                }
                return projection
            }
            guard !targets.isEmpty else { throw UsageError("must name at least one projection") }
            // A projection listed twice would write its tensors twice, and an adapter file refuses that.
            var seen = Set<Projection>()
            if let repeated = targets.first(where: { !seen.insert($0).inserted }) {
                throw UsageError("names \(repeated.rawValue) twice; name each projection once")
            }
            return targets
        }
        static let learningRate = Option("lr", value: "LR", default: TrainingDefaults.learningRate,
                                         defaultHelp: "\(number(TrainingDefaults.learningRate)), cosine with 10% warm-up",
                                         help: "peak learning rate") { text in
            let rate = try OptionParsing.number(text)
            guard rate > 0 else { throw UsageError("must be positive, got \(rate)") }
            return rate
        }
        static let batchSize = Option("batch-size", value: "B", default: TrainingDefaults.batchSize, in: 1...4096,
                                      help: "sequences per micro-batch")
        static let gradientAccumulation = Option("grad-accum", default: 1, in: 1...4096, help: "micro-batches per optimizer step")
        static let maxLength = Option("max-length", value: "L", default: 512, in: 2...1_000_000, help: "truncate sequences to L tokens")
        static let checkpointEvery = Option("checkpoint-every", default: 10, in: 1...10_000_000, help: "checkpoint every N steps")
        static let checkpointDirectory = Option<String?>("checkpoint-dir", value: "DIR",
                                                         help: "checkpoint directory (default ADAPTER.checkpoints)")
        static let heldOut = Option<String?>("held-out", value: "FILE",
                                             help: "JSON Lines never trained on: held-out loss for early stopping")
        static let evalEvery = Option("eval-every", value: "M", default: TrainingDefaults.earlyStoppingEvery, in: 1...10_000_000,
                                      help: "with --held-out: evaluate every M steps")
        static let patience = Option("patience", value: "P", default: TrainingDefaults.earlyStoppingPatience, in: 1...1_000_000,
                                     help: "with --held-out: stop after P evaluations without improvement; the best weights are kept")
        static let seed = Option("seed", value: "S", default: UInt64(0), defaultHelp: "0",
                                 help: "seed of data order, dropout and initialisation") { text in
            guard let seed = UInt64(text) else { throw UsageError("expects a non-negative integer, got '\(text)'") }
            return seed
        }
        static let threads = Option<Int?>("threads", value: "T", in: ModelCommands.threadRange,
                                          help: "threads that compute each step, 1 to \(ModelCommands.threadRange.upperBound); 1 and 2 differ in the last bits (default: every core this process may use, as a night's blas_threads auto; on --resume, the checkpoint's)")
        static let resume = Flag("resume", help: "continue from the newest valid checkpoint")
        static let initAdapter = Option<String?>("init-adapter", value: "ADAPTER",
                                                 help: "start from this adapter file's weights (same model, rank, alpha, targets and chat template) instead of a fresh initialisation")
        static let baseWeights = Option("base-weights", value: "quantized|f32", default: BaseWeightStorage.quantized,
                                        defaultHelp: "quantized; on --resume, the checkpoint's",
                                        help: "keep the frozen model in its file's types (about the file's size) or dequantized to f32 (4 bytes a weight; the last bits of the numbers differ)") { text in
            guard let storage = BaseWeightStorage(rawValue: text) else { throw UsageError("must be quantized or f32") }
            return storage
        }
        static let forwardProducts = Option("forward-products", value: "int8|sgemm", default: ForwardProducts.int8,
                                            defaultHelp: "int8; on --resume, the checkpoint's",
                                            help: "with quantized base weights, multiply them in the forward pass with 8-bit integer kernels where the CPU has AVX-512 VNNI, or dequantized with sgemm (the last bits of the numbers differ)") { text in
            guard let forward = ForwardProducts(rawValue: text) else { throw UsageError("must be int8 or sgemm") }
            return forward
        }
    }

    static func run(_ invocation: Invocation) throws {
        let args = invocation.arguments
        let dataURL = URL(fileURLWithPath: try args.required(O.data))
        let modelURL = try modelLocation(try args.required(O.model), invocation)
        let out = URL(fileURLWithPath: try args.required(O.out))
        var inputs = [(option: "model", url: modelURL), (option: "data", url: dataURL)]
        let heldOutPath = try args[O.heldOut]
        if let path = heldOutPath { inputs.append((option: "held-out", url: URL(fileURLWithPath: path))) }
        let initAdapter = try args[O.initAdapter].map { URL(fileURLWithPath: $0) }
        if let initAdapter { inputs.append((option: "init-adapter", url: initAdapter)) }
        let state = try GlobalOptions.hostState(invocation)
        try OutputPath.check(out, option: "out", kind: .adapterFile, state: state, inputs: inputs)
        let checkpointDirectory = URL(fileURLWithPath: try args[O.checkpointDirectory] ?? out.path + ".checkpoints")
        // Its step-N.ckpt files are written and the older ones deleted: never in the state's own directories.
        try OutputPath.checkDirectory(checkpointDirectory, option: "checkpoint-dir", files: [], state: state, inputs: inputs)
        let lora = try loraConfig(args)
        let steps = try args[O.steps]
        var request = TrainingService.Request(
            data: dataURL, model: modelURL, out: out, heldOut: heldOutPath.map { URL(fileURLWithPath: $0) },
            checkpointDirectory: checkpointDirectory, lora: lora, steps: steps, batchSize: try args[O.batchSize],
            gradientAccumulation: try args[O.gradientAccumulation], learningRate: try args[O.learningRate], seed: try args[O.seed],
            maxLength: try args[O.maxLength], checkpointEvery: try args[O.checkpointEvery],
            threads: try args[O.threads], resume: args[O.resume],
            // Read only with --held-out: without it, giving either is the error, whatever its value.
            evalEvery: heldOutPath == nil ? TrainingDefaults.earlyStoppingEvery : try args[O.evalEvery],
            patience: heldOutPath == nil ? TrainingDefaults.earlyStoppingPatience : try args[O.patience],
            earlyStoppingGiven: args.given(O.evalEvery) || args.given(O.patience), chatFormat: try args[ModelCommands.chatFormat])
        request.baseWeights = args.given(O.baseWeights) ? try args[O.baseWeights] : nil
        request.forwardProducts = args.given(O.forwardProducts) ? try args[O.forwardProducts] : nil
        request.initAdapter = initAdapter
        let trained: (result: TrainingService.Result, shortDigest: String)
        do {
            trained = try TrainingService.train(request, liveProgress: Console.stderrIsTerminal,
                                                progress: { FileHandle.standardError.write(Data($0.utf8)) },
                                                warn: { Console.error($0) })
        } catch let error as TrainingService.RequestError {
            throw UsageError(error.description)
        }
        let result = trained.result
        if args[.json] {
            Console.print(JSON.pretty(result))
        } else {
            Console.print("wrote \(TerminalText.escaped(out.path)) (digest \(trained.shortDigest)) after \(result.steps) steps; "
                + "final loss \(result.losses.last.map { String(format: "%.4f", $0) } ?? "–"), "
                + "\(Int(result.tokensPerSecond.rounded())) tokens/s")
        }
    }

    /// A path, or the name of a file in the state directory's models/ (with or without `.gguf`).
    static func modelLocation(_ text: String, _ invocation: Invocation) throws -> URL {
        if FileManager.default.fileExists(atPath: text) { return URL(fileURLWithPath: text) }
        let models = try GlobalOptions.stateDirectory(invocation).models
        for name in [text, text + ".gguf"] {
            let candidate = models.appendingPathComponent(name)
            if FileManager.default.fileExists(atPath: candidate.path) { return candidate }
        }
        let reason = UnreadablePath.reason(text)
        guard reason == UnreadablePath.missing else { throw UsageError("--model: cannot read \(text): \(reason)") }
        throw UsageError("--model: no file \(text), nor a model of that name in the state's models/")
    }

    static func loraConfig(_ args: ParsedArguments) throws -> LoRAConfig {
        var config = LoRAConfig()
        config.rank = try args[O.rank]
        config.alpha = Float(try args[O.alpha])
        config.dropout = Float(try args[O.dropout])
        if let targets = try args[O.targets] { config.targets = targets }
        return config
    }
}
