import AdaptCore
import Adapters
import Foundation
import Model

/// A LoRA training run on a GGUF model, ready to go: the model loaded, examples formatted through the
/// model's chat template and tokenized, the adapter initialised. Both `adapt train` and the train worker
/// use it, so the two compute the same numbers from the same inputs.
public struct LoRATrainingRun: Sendable {
    public let model: LlamaModel
    public let baseModelDigest: Digest
    public let formatter: ChatFormatter
    public let lora: LoRAConfig
    /// How the forward passes multiply a quantized base, as asked (`model.forwardKernels` says what runs).
    public let forward: ForwardProducts
    public let configuration: TrainingConfiguration
    public let training: [TrainingSequence]
    public let heldOut: [TrainingSequence]
    /// Examples cut to `maxLength`.
    public let truncatedCount: Int
    /// Examples with nothing to learn from (empty completion, zero weight, prompt filling `maxLength`).
    public let droppedCount: Int
    /// What control-token text inside a prompt becomes: text, unless replaying a run recorded before that rule.
    public let promptMarkers: PromptMarkers

    /// Loads the model at `modelURL` and prepares `examples` (and `heldOut` for early stopping), formatted
    /// through the model's chat template or the convention `chatFormat` names (required without a template).
    /// `configuration.adapter` is replaced by `lora`'s settings, resolved for the architecture. `base`: how the frozen matrices are kept
    /// (`BaseWeightStorage`: `.quantized` needs a sixth of the memory for Q4 files; the last bits differ). `forward`:
    /// how its forward passes multiply a quantized base (`ForwardProducts`; recorded in each checkpoint). `promptMarkers`:
    /// what control-token text in a prompt becomes (`PromptMarkers`; `.parsed` only for runs recorded before `.text`).
    public init(modelURL: URL, examples: [TrainingExample], heldOut: [TrainingExample] = [], lora: LoRAConfig,
                configuration: TrainingConfiguration, base: BaseWeightStorage = .f32, forward: ForwardProducts = .sgemm,
                chatFormat: ChatConvention? = nil, promptMarkers: PromptMarkers = .text) throws {
        let file = try GGUFFile(url: modelURL)
        let tokenizer = try Tokenizer(gguf: file)
        // Checked before the weights are loaded: a base model without --chat-format is refused at once.
        let formatter = try ChatFormatter(gguf: file, chatFormat: chatFormat)
        // phi3's q, k, v (and gate, up) become the one pair on their fused tensor that other tools know;
        // targets the architecture cannot take are refused before the weights are loaded.
        let lora = try lora.resolved(for: LlamaModel.Hyperparameters(file: file).architecture)
        let model = try LlamaModel(file: file, base: base, forward: forward)
        try formatter.validate(against: tokenizer)
        var configuration = configuration
        configuration.adapter = lora.settings
        try configuration.validate()
        var builder = SequenceBuilder(maxLength: min(configuration.maxLength, model.hyperparameters.contextLength))
        let training = try Self.sequences(examples, tokenizer: tokenizer, formatter: formatter, markers: promptMarkers,
                                          builder: &builder)
        var heldBuilder = SequenceBuilder(maxLength: builder.maxLength)
        let held = try Self.sequences(heldOut, tokenizer: tokenizer, formatter: formatter, markers: promptMarkers,
                                      builder: &heldBuilder)
        guard !training.isEmpty else {
            throw TrainingError.emptyDataset(reason: "all \(examples.count) examples were dropped (empty completion, zero weight or a prompt longer than \(builder.maxLength) tokens)")
        }
        self.model = model
        self.baseModelDigest = try Digest.sha256(fileAt: modelURL)
        self.formatter = formatter
        self.lora = lora
        self.forward = forward
        self.configuration = configuration
        self.training = training
        self.heldOut = held
        self.truncatedCount = builder.truncatedCount + heldBuilder.truncatedCount
        self.droppedCount = builder.droppedCount + heldBuilder.droppedCount
        self.promptMarkers = promptMarkers
    }

    /// Token ids of an example: the prompt as a user turn followed by the opening of the assistant's turn
    /// (exactly what generation feeds the model), then the completion and the end-of-turn marker, which the
    /// adapter must learn to produce; the split is `ChatFormatter.trainingPair`'s. The completion's own text
    /// never turns into control tokens, nor, under `markers: .text`, does the prompt's: only the template's do.
    public static func tokens(of example: TrainingExample, tokenizer: Tokenizer, formatter: ChatFormatter,
                              markers: PromptMarkers = .text) throws -> (prompt: [Int], completion: [Int]) {
        let pair = try formatter.trainingPairText([.user(example.prompt), .assistant(example.completion)])
        let content = String(pair.completion.dropLast(formatter.endOfTurn.count))
        let prompt = tokenizer.encode(pair.prompt, markers: markers, addBOS: tokenizer.addBOS)
        let completion = tokenizer.encode(content, parseSpecial: false)
            + tokenizer.encode(formatter.endOfTurn, parseSpecial: true)
        return (prompt, completion)
    }

    static func sequences(_ examples: [TrainingExample], tokenizer: Tokenizer, formatter: ChatFormatter,
                          markers: PromptMarkers, builder: inout SequenceBuilder) throws -> [TrainingSequence] {
        var sequences: [TrainingSequence] = []
        for example in examples {
            let sequence: TrainingSequence?
            if example.conversation != nil {
                sequence = builder.append(segments: try segments(of: example, tokenizer: tokenizer, formatter: formatter,
                                                                 markers: markers),
                                          weight: example.weight)
            } else {
                let (prompt, completion) = try tokens(of: example, tokenizer: tokenizer, formatter: formatter, markers: markers)
                sequence = builder.append(prompt: prompt, completion: completion, weight: example.weight)
            }
            if let sequence { sequences.append(sequence) }
        }
        return sequences
    }

    /// The trainer for this run, checkpointing into `store`. Sets OpenBLAS to `configuration.threads`
    /// (a process-wide setting; results depend on it in the last bits).
    ///
    /// `startingFrom`: a weights parent whose tensors are the step-0 weights instead of a fresh initialisation;
    /// one this run cannot start from throws its `WeightsParentMismatch` (check first with `mismatch(with:)`).
    public func trainer(store: (any CheckpointStore)?, clock: any Clock = SystemClock(),
                        startingFrom parent: WeightsParent? = nil) throws -> Trainer {
        let fresh = LoRAGradientSource.initialParameters(for: model, config: lora, seed: configuration.seed)
        var initial = fresh
        if let parent {
            if let mismatch = mismatch(with: parent, fresh: fresh) { throw mismatch }
            guard let arranged = parent.arranged(like: fresh) else {
                preconditionFailure("a parent without a mismatch has the run's tensor layout")
            }
            initial = arranged
        }
        try BLAS.setThreads(configuration.threads)
        return try Trainer(configuration: configuration,
                           source: LoRAGradientSource(model: model, config: lora, seed: configuration.seed,
                                                      threads: configuration.threads),
                           data: training, heldOut: heldOut, initial: initial,
                           baseModelDigest: baseModelDigest, store: store, clock: clock, baseWeights: model.baseStorage,
                           forwardKernels: recordedForwardKernels, weightsParent: parent?.digest)
    }

    /// Why `parent` cannot be this run's weights parent (another base model, chat template, rank, alpha, targets
    /// or architecture), nil when it can.
    public func mismatch(with parent: WeightsParent) -> WeightsParentMismatch? {
        mismatch(with: parent, fresh: LoRAGradientSource.initialParameters(for: model, config: lora, seed: configuration.seed))
    }

    private func mismatch(with parent: WeightsParent, fresh: NamedTensors) -> WeightsParentMismatch? {
        parent.mismatch(baseModelDigest: baseModelDigest, convention: formatter.convention.rawValue,
                        templateDigest: Digest(hex: formatter.templateDigest), settings: lora.settings, layout: fresh)
    }

    /// The forward kernels a checkpoint or a step's arithmetic records: left out where sgemm was asked for, as
    /// in every record made before the choice existed.
    var recordedForwardKernels: String? { forward == .sgemm ? nil : model.forwardKernels }

    /// This process's arithmetic at `threads` BLAS threads, with this run's storage and forward kernels.
    public func arithmetic(threads: Int) -> BLASArithmetic {
        var arithmetic = BLASArithmetic.current(threads: threads)
        arithmetic.baseWeights = model.baseStorage.rawValue
        arithmetic.forwardKernels = recordedForwardKernels
        return arithmetic
    }

    /// The adapter file for a finished state: its best (or last) weights and metadata, no user text.
    public func adapter(from state: TrainingState) -> AdapterFile {
        var metrics: [String: Double] = [:]
        if let last = state.losses.last { metrics["final_loss"] = last }
        if let best = state.bestEvaluation {
            metrics["best_held_out_loss"] = best.loss
            metrics["best_step"] = Double(best.step)
        }
        let metadata = AdapterFileMetadata(
            baseModelDigest: baseModelDigest, chatConvention: formatter.convention.rawValue,
            templateDigest: Digest(hex: formatter.templateDigest), targets: lora.targets.map(\.rawValue),
            rank: lora.rank, alpha: lora.alpha, steps: state.step, trainingExamples: training.count,
            heldOutExamples: heldOut.count, truncatedExamples: truncatedCount, trainingTokens: state.tokens,
            metrics: metrics, trainingConfiguration: configuration.numericSettings,
            trainingConfigurationDigest: configuration.digest)
        return AdapterFile(metadata: metadata, tensors: state.result)
    }
}
