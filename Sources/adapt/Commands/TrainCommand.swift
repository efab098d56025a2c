import AdaptCore
import CommandLineKit
import Foundation
import Model
import Training

/// `adapt train`: LoRA training on a JSON Lines file, standalone, with checkpoints and `--resume`.
enum TrainCommands {
    static let all: [Command] = [train]

    static let train = Command(
        "train",
        summary: "train a LoRA adapter on {prompt, completion[, weight]} lines, checkpointing as it goes",
        discussion: """
            Each prompt is formatted as a user turn through the model's chat template; the loss is the weighted
            cross-entropy of the completion (and its end-of-turn marker) only. Checkpoints go to
            ADAPTER.checkpoints/ (or --checkpoint-dir); --resume continues from the newest valid one and ends
            with exactly the weights and loss curve an uninterrupted run would have. Progress goes to stderr:
            a live line on a terminal, JSON lines otherwise.
            """,
        options: [
            OptionSpec("data", value: "FILE", help: "JSON Lines of {\"prompt\", \"completion\"[, \"weight\"]}"),
            OptionSpec("model", value: "GGUF", help: "base model file (or a name in the state's models/)"),
            OptionSpec("out", value: "ADAPTER", help: "where to write the adapter file (replaced if it exists; never the --model, --data or --held-out file)"),
            OptionSpec("steps", value: "N", help: "optimizer steps (default \(TrainingDefaults.steps))"),
            OptionSpec("rank", value: "R", help: "LoRA rank (default \(TrainingDefaults.rank))"),
            OptionSpec("alpha", value: "A", help: "LoRA alpha (default \(number(TrainingDefaults.alpha)))"),
            OptionSpec("dropout", value: "P", help: "LoRA dropout (default \(number(TrainingDefaults.dropout)))"),
            OptionSpec("targets", value: "q,k,v,o", help: "projections to adapt: q,k,v,o,gate,up,down (default q,k,v,o)"),
            OptionSpec("lr", value: "LR", help: "peak learning rate (default \(number(TrainingDefaults.learningRate)), cosine with 10% warm-up)"),
            OptionSpec("batch-size", value: "B", help: "sequences per micro-batch (default \(TrainingDefaults.batchSize))"),
            OptionSpec("grad-accum", value: "N", help: "micro-batches per optimizer step (default 1)"),
            OptionSpec("max-length", value: "L", help: "truncate sequences to L tokens (default 512)"),
            OptionSpec("checkpoint-every", value: "N", help: "checkpoint every N steps (default 10)"),
            OptionSpec("checkpoint-dir", value: "DIR", help: "checkpoint directory (default ADAPTER.checkpoints)"),
            OptionSpec("held-out", value: "FILE", help: "JSON Lines never trained on: held-out loss for early stopping"),
            OptionSpec("eval-every", value: "M", help: "with --held-out: evaluate every M steps (default \(TrainingDefaults.earlyStoppingEvery))"),
            OptionSpec("patience", value: "P", help: "with --held-out: stop after P evaluations without improvement (default \(TrainingDefaults.earlyStoppingPatience)); the best weights are kept"),
            OptionSpec("seed", value: "S", help: "seed of data order, dropout and initialisation (default 0)"),
            OptionSpec("threads", value: "T", help: "threads that compute each step; 1 and 2 differ in the last bits (default 1; on --resume, the checkpoint's)"),
            .flag("resume", help: "continue from the newest valid checkpoint"),
            .json,
        ]
    ) { invocation in
        try run(invocation)
    }

    /// A default as the help shows it: 16, 0.05, 0.0005.
    static func number(_ value: Double) -> String { String(format: "%g", value) }

    static func run(_ invocation: Invocation) throws {
        let args = invocation.arguments
        let dataURL = URL(fileURLWithPath: try args.required("data"))
        let modelURL = try modelLocation(try args.required("model"), invocation)
        let out = URL(fileURLWithPath: try args.required("out"))
        var inputs = [(option: "model", url: modelURL), (option: "data", url: dataURL)]
        if let path = args.string("held-out") { inputs.append((option: "held-out", url: URL(fileURLWithPath: path))) }
        try OutputPath.check(out, option: "out", inputs: inputs)
        let checkpointDirectory = URL(fileURLWithPath: args.string("checkpoint-dir") ?? out.path + ".checkpoints")
        let store = DirectoryCheckpointStore(directory: checkpointDirectory)

        let lora = try loraConfig(args)
        var configuration = try trainingConfiguration(args)
        // A resumed run uses the thread count its checkpoints were made with, unless told otherwise (and then
        // the checkpoint check refuses a different one, naming --threads).
        let existing = (try? store.loadNewest()) ?? nil
        if args.flag("resume"), args.string("threads") == nil, let existing {
            configuration.threads = existing.checkpoint.configuration.threads
        }
        if !args.flag("resume"), let existing {
            throw UsageError("\(checkpointDirectory.lastPathComponent) already holds a checkpoint at step \(existing.checkpoint.state.step); pass --resume to continue it or remove the directory to start fresh")
        }

        guard let data = FileManager.default.contents(atPath: dataURL.path) else {
            throw TrainingError.io("cannot read \(dataURL.lastPathComponent); check the path")
        }
        let examples = try TrainingExample.parseJSONLines(data, name: dataURL.lastPathComponent)
        var heldOut: [TrainingExample] = []
        if let path = args.string("held-out") {
            guard let text = FileManager.default.contents(atPath: path) else {
                throw TrainingError.io("cannot read \(URL(fileURLWithPath: path).lastPathComponent); check the path")
            }
            heldOut = try TrainingExample.parseJSONLines(text, name: URL(fileURLWithPath: path).lastPathComponent)
            configuration.earlyStopping = EarlyStopping(
                every: try args.int("eval-every", default: TrainingDefaults.earlyStoppingEvery, in: 1...10_000_000),
                patience: try args.int("patience", default: TrainingDefaults.earlyStoppingPatience, in: 1...1_000_000))
        } else if args.has("eval-every") || args.has("patience") {
            throw UsageError("--eval-every and --patience need --held-out FILE")
        }
        let run = try LoRATrainingRun(modelURL: modelURL, examples: examples, heldOut: heldOut, lora: lora,
                                      configuration: configuration)
        if run.truncatedCount > 0 {
            Console.error("warning: \(run.truncatedCount) of \(examples.count) examples were longer than \(run.configuration.maxLength) tokens and were truncated")
        }
        if run.droppedCount > 0 {
            Console.error("warning: \(run.droppedCount) examples had nothing to learn from (empty completion, zero weight or an over-long prompt) and were skipped")
        }

        let trainer = try run.trainer(store: store)
        let printer = ProgressPrinter(style: Console.stderrIsTerminal ? .liveLine : .jsonLines) { text in
            FileHandle.standardError.write(Data(text.utf8))
        }
        var state = trainer.freshState()
        if args.flag("resume") {
            if let (resumed, event) = try trainer.resumeState() {
                state = resumed
                printer(event)
            } else {
                Console.error("no checkpoint in \(checkpointDirectory.lastPathComponent); starting fresh")
            }
        }
        let clock = SystemClock()
        let start = clock.nowMilliseconds(), startTokens = state.tokens
        state = try trainer.run(from: state) { printer($0) }
        printer.finish()
        let seconds = Double(clock.nowMilliseconds() - start) / 1000
        let tokensPerSecond = seconds > 0 ? Double(state.tokens - startTokens) / seconds : 0

        let digest = try run.adapter(from: state).write(to: out)
        if args.flag("json") {
            Console.print(JSON.pretty(TrainResult(adapter: out.path, digest: digest.hex, steps: state.step,
                                                  losses: state.losses, tokensPerSecond: tokensPerSecond)))
        } else {
            Console.print("wrote \(out.path) (digest \(digest.short)) after \(state.step) steps; "
                + "final loss \(state.losses.last.map { String(format: "%.4f", $0) } ?? "–"), "
                + "\(Int(tokensPerSecond.rounded())) tokens/s")
        }
    }

    struct TrainResult: Encodable {
        var adapter: String
        var digest: String
        var steps: Int
        var losses: [Double]
        var tokensPerSecond: Double
        enum CodingKeys: String, CodingKey {
            case adapter, digest, steps, losses
            case tokensPerSecond = "tokens_per_second"
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
        throw UsageError("--model: no file \(text), nor a model of that name in the state's models/")
    }

    static func loraConfig(_ args: ParsedArguments) throws -> LoRAConfig {
        var config = LoRAConfig()
        config.rank = try args.int("rank", default: TrainingDefaults.rank, in: 1...1024)
        config.alpha = Float(try args.double("alpha") ?? TrainingDefaults.alpha)
        config.dropout = Float(try args.double("dropout") ?? TrainingDefaults.dropout)
        guard config.dropout >= 0, config.dropout < 1 else { throw UsageError("--dropout must be in [0, 1), got \(config.dropout)") }
        guard config.alpha > 0 else { throw UsageError("--alpha must be positive, got \(config.alpha)") }
        if let names = args.list("targets") {
            config.targets = try names.map { name in
                guard let projection = Projection(rawValue: name) else {
                    throw UsageError("--targets: unknown projection '\(name)'; use q, k, v, o, gate, up, down")
                }
                return projection
            }
            guard !config.targets.isEmpty else { throw UsageError("--targets must name at least one projection") }
            // A projection listed twice would write its tensors twice, and an adapter file refuses that.
            var seen = Set<Projection>()
            if let repeated = config.targets.first(where: { !seen.insert($0).inserted }) {
                throw UsageError("--targets names \(repeated.rawValue) twice; name each projection once")
            }
        }
        return config
    }

    static func trainingConfiguration(_ args: ParsedArguments) throws -> TrainingConfiguration {
        let steps = try args.int("steps", default: TrainingDefaults.steps, in: 1...10_000_000)
        let rate = try args.double("lr") ?? TrainingDefaults.learningRate
        guard rate > 0 else { throw UsageError("--lr must be positive, got \(rate)") }
        let seedText = args.string("seed") ?? "0"
        guard let seed = UInt64(seedText) else { throw UsageError("--seed expects a non-negative integer, got '\(seedText)'") }
        return TrainingConfiguration(
            steps: steps,
            batchSize: try args.int("batch-size", default: TrainingDefaults.batchSize, in: 1...4096),
            gradientAccumulation: try args.int("grad-accum", default: 1, in: 1...4096),
            learningRate: rate,
            schedule: .cosine(warmup: TrainingDefaults.warmupSteps(forSteps: steps), floor: 0.1),
            seed: seed,
            maxLength: try args.int("max-length", default: 512, in: 2...1_000_000),
            threads: try args.int("threads", default: 1, in: ModelCommands.threadRange),
            checkpointEvery: try args.int("checkpoint-every", default: 10, in: 1...10_000_000))
    }
}
