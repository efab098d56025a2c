import AdaptCore
import Foundation
import Model
import Steps
import Training

/// `adapt train`: a standalone LoRA training run on JSON Lines files, checkpointing as it goes, with `--resume`.
public enum TrainingService {
    /// What `train` is told, every value already parsed.
    public struct Request: Sendable {
        public var data: URL
        public var model: URL
        public var out: URL
        public var heldOut: URL?
        public var checkpointDirectory: URL
        public var lora: LoRAConfig
        public var steps: Int
        public var batchSize: Int
        public var gradientAccumulation: Int
        public var learningRate: Double
        public var seed: UInt64
        public var maxLength: Int
        public var checkpointEvery: Int
        /// `--threads`; nil: the resumed checkpoint's count, or for a fresh run every core this process may use (as a
        /// pipeline's `blas_threads: auto`).
        public var threads: Int?
        public var resume: Bool
        /// `--eval-every` and `--patience` (their defaults when not given: `earlyStoppingGiven` says whether one was).
        public var evalEvery: Int
        public var patience: Int
        public var earlyStoppingGiven: Bool
        /// `--base-weights`: how the frozen model is kept while training (the last bits of the numbers differ); nil:
        /// the resumed checkpoint's, or quantized for a fresh run.
        public var baseWeights: BaseWeightStorage?
        /// `--forward-products`: how a quantized base is multiplied in the forward pass; nil: the resumed
        /// checkpoint's, or int8 for a fresh run.
        public var forwardProducts: ForwardProducts?
        /// `--chat-format`: nil formats examples through the model's chat template (required then).
        public var chatFormat: ChatConvention?
        /// `--init-adapter`: an adapter file whose weights the run starts from (its weights parent); nil starts
        /// from a fresh initialisation.
        public var initAdapter: URL?

        public init(data: URL, model: URL, out: URL, heldOut: URL?, checkpointDirectory: URL, lora: LoRAConfig, steps: Int,
                    batchSize: Int, gradientAccumulation: Int, learningRate: Double, seed: UInt64, maxLength: Int,
                    checkpointEvery: Int, threads: Int?, resume: Bool, evalEvery: Int, patience: Int, earlyStoppingGiven: Bool,
                    chatFormat: ChatConvention? = nil) {
            self.chatFormat = chatFormat
            (self.data, self.model, self.out, self.heldOut, self.checkpointDirectory, self.lora) =
                (data, model, out, heldOut, checkpointDirectory, lora)
            (self.steps, self.batchSize, self.gradientAccumulation, self.learningRate, self.seed, self.maxLength) =
                (steps, batchSize, gradientAccumulation, learningRate, seed, maxLength)
            (self.checkpointEvery, self.threads, self.resume, self.evalEvery, self.patience, self.earlyStoppingGiven) =
                (checkpointEvery, threads, resume, evalEvery, patience, earlyStoppingGiven)
        }
    }

    /// A request the checkpoints or the other options contradict: the command reports it as a usage error.
    public enum RequestError: Error, CustomStringConvertible {
        /// A checkpoint exists and `--resume` was not given.
        case checkpointExists(directory: String, step: Int)
        case earlyStoppingNeedsHeldOut

        public var description: String {
            switch self {
            case let .checkpointExists(directory, step):
                "\(directory) already holds a checkpoint at step \(step); pass --resume to continue it or remove the directory to start fresh"
            case .earlyStoppingNeedsHeldOut:
                "--eval-every and --patience need --held-out FILE"
            }
        }
    }

    /// What a finished run wrote (`train --json`).
    public struct Result: Encodable, Sendable {
        public var adapter: String
        public var digest: String
        public var steps: Int
        public var losses: [Double]
        public var tokensPerSecond: Double
        /// How the frozen model was kept (`quantized` or `f32`).
        public var baseWeights: String
        /// The forward products that ran (`int8-v1` or `sgemm`).
        public var forwardKernels: String
        /// The largest activations and workspaces of a training pass, in bytes.
        public var activationBytes: Int
        enum CodingKeys: String, CodingKey {
            case adapter, digest, steps, losses
            case tokensPerSecond = "tokens_per_second"
            case baseWeights = "base_weights"
            case forwardKernels = "forward_kernels"
            case activationBytes = "activation_bytes"
        }
    }

    /// Trains and writes the adapter to `request.out`. Warnings go to `warn`; progress to `progress` (a live
    /// line when `liveProgress`, JSON lines otherwise). `short` is the adapter digest's short form, for the summary.
    public static func train(_ request: Request, liveProgress: Bool, progress: @escaping (String) -> Void,
                             warn: (String) -> Void) throws -> (result: Result, shortDigest: String) {
        let store = DirectoryCheckpointStore(directory: request.checkpointDirectory)
        var configuration = TrainingConfiguration(
            steps: request.steps, batchSize: request.batchSize, gradientAccumulation: request.gradientAccumulation,
            learningRate: request.learningRate, schedule: .cosine(warmup: TrainingDefaults.warmupSteps(forSteps: request.steps), floor: 0.1),
            seed: request.seed, maxLength: request.maxLength, threads: request.threads ?? StepThreads.available(), checkpointEvery: request.checkpointEvery)
        // A resumed run uses the thread count its checkpoints were made with, unless told otherwise (and then
        // the checkpoint check refuses a different one, naming --threads).
        let existing = (try? store.loadNewest()) ?? nil
        if request.resume, request.threads == nil, let existing {
            configuration.threads = existing.checkpoint.configuration.threads
        }
        if !request.resume, let existing {
            throw RequestError.checkpointExists(directory: request.checkpointDirectory.lastPathComponent,
                                                step: existing.checkpoint.state.step)
        }

        // Weights given to start from (`--init-adapter`) are what the decay pulls toward (AdamW), as in a nightly
        // step; without them it pulls toward zero whatever the flag says. A resumed run keeps its checkpoint's rule,
        // which runs checkpointed before the rule existed did not have.
        configuration.optimizer.decaysTowardWeightsParent = request.resume && existing != nil
            ? existing?.checkpoint.configuration.optimizer.decaysTowardWeightsParent ?? false
            : true
        let examples = try examples(at: request.data)
        var heldOut: [TrainingExample] = []
        if let url = request.heldOut {
            heldOut = try self.examples(at: url)
            // A run that starts from given weights measures them first, so that no step beating them hands them back
            // (the nightly train step does the same); one from zero starts measuring at its first evaluation.
            configuration.earlyStopping = Training.EarlyStopping(every: request.evalEvery, patience: request.patience,
                                                                 evaluatesAtStart: request.initAdapter != nil)
        } else if request.earlyStoppingGiven {
            throw RequestError.earlyStoppingNeedsHeldOut
        }
        // A resumed run computes as the checkpoint's did unless told otherwise (then the trainer refuses a mismatch).
        let baseWeights = request.baseWeights ?? (request.resume ? existing?.checkpoint.baseWeights : nil) ?? .quantized
        // A checkpoint continues with the arithmetic it recorded: int8 where it names int8 kernels; sgemm where it
        // names none (made before the choice) or sgemm (asked for int8 on a CPU that had no int8 kernels then).
        let checkpointForward: ForwardProducts? = request.resume
            ? existing.map { ($0.checkpoint.arithmetic?.forwardKernels ?? "sgemm") == "sgemm" ? .sgemm : .int8 } : nil
        let forward = request.forwardProducts ?? checkpointForward ?? .int8
        let run = try LoRATrainingRun(modelURL: request.model, examples: examples, heldOut: heldOut, lora: request.lora,
                                      configuration: configuration, base: baseWeights, forward: forward, chatFormat: request.chatFormat)
        // Resumed under other forward kernels (asked for, or this CPU lacks the checkpoint's), the adapter would mix
        // two arithmetics: refused, as another storage is.
        // (Another storage is refused by the trainer, naming --base-weights.)
        if request.resume, let existing, existing.checkpoint.baseWeights == baseWeights {
            let stored = ForwardProducts.recordedName(existing.checkpoint.arithmetic?.forwardKernels ?? "sgemm")
            if stored != run.model.forwardKernels {
                let way = stored == "sgemm" ? "pass --forward-products sgemm to resume it" : "resume it without ADAPT_PROMPT_KERNELS=sgemm"
                throw TrainingError.checkpointMismatch(file: existing.reference.name, field: "forward products", stored: stored,
                                                       current: run.model.forwardKernels, remedy: way + ", or start fresh")
            }
        }
        if run.truncatedCount > 0 {
            warn("warning: \(run.truncatedCount) of \(examples.count) examples were longer than \(run.configuration.maxLength) tokens and were truncated")
        }
        if run.droppedCount > 0 {
            warn("warning: \(run.droppedCount) examples had nothing to learn from (empty completion, zero weight or an over-long prompt) and were skipped")
        }

        // Read and checked before the first step: an adapter of another shape is refused, naming the field.
        let parent = try request.initAdapter.map { url -> WeightsParent in
            guard let data = FileManager.default.contents(atPath: url.path) else {
                throw TrainingError.io("cannot read \(url.lastPathComponent) (--init-adapter); check the path")
            }
            return try WeightsParent(data: data, name: url.lastPathComponent)
        }
        let trainer = try run.trainer(store: store, startingFrom: parent)
        let printer = ProgressPrinter(style: liveProgress ? .liveLine : .jsonLines, write: progress)
        var state = trainer.freshState()
        if request.resume {
            if let (resumed, event) = try trainer.resumeState() {
                state = resumed
                printer(event)
            } else {
                warn("no checkpoint in \(request.checkpointDirectory.lastPathComponent); starting fresh")
            }
        }
        let clock = SystemClock()
        let start = clock.nowMilliseconds(), startTokens = state.tokens
        state = try trainer.run(from: state) { printer($0) }
        printer.finish()
        let seconds = Double(clock.nowMilliseconds() - start) / 1000
        let tokensPerSecond = seconds > 0 ? Double(state.tokens - startTokens) / seconds : 0

        let digest = try run.adapter(from: state).write(to: request.out)
        return (Result(adapter: request.out.path, digest: digest.hex, steps: state.step, losses: state.losses,
                       tokensPerSecond: tokensPerSecond, baseWeights: baseWeights.rawValue, forwardKernels: run.model.forwardKernels,
                       activationBytes: run.model.trainingBufferBytes), digest.short)
    }

    static func examples(at url: URL) throws -> [TrainingExample] {
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw TrainingError.io("cannot read \(url.lastPathComponent); check the path")
        }
        return try TrainingExample.parseJSONLines(data, name: url.lastPathComponent)
    }
}
