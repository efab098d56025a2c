import AdaptCore
import Adapters
import Foundation
import Model

/// The training loop: micro-batches → summed gradients → AdamW, with held-out evaluation, early stopping
/// and checkpoints.
///
/// The loop is a function of (configuration, data, initial parameters, gradient source) and the state it is
/// given; wall time only feeds the progress figures. So a run resumed from any checkpoint continues with
/// the bits the uninterrupted run had at that step, and ends with the same parameters and loss curve, as long
/// as the gradient source itself is deterministic (BLAS thread count fixed: `configuration.threads`).
public struct Trainer: Sendable {
    public let configuration: TrainingConfiguration
    public let source: any GradientSource
    public let data: [TrainingSequence]
    public let heldOut: [TrainingSequence]
    /// The parameters before the first step (LoRA A from the seeded RNG, B zero; or a weights parent's tensors).
    public let initial: NamedTensors
    public let baseModelDigest: Digest
    /// SHA-256 over the tokens and weights of the training and held-out sequences.
    public let datasetDigest: Digest
    public let store: (any CheckpointStore)?
    public let clock: any Clock
    /// How the source keeps the base model's frozen matrices, recorded in each checkpoint: the two storages
    /// differ in the last bits, so a checkpoint resumes only under its own. Nil for sources without a base model.
    public let baseWeights: BaseWeightStorage?
    /// The forward kernels the source multiplies a quantized base with, recorded in each checkpoint beside the
    /// storage (`BLASArithmetic.forwardKernels`); nil where the run did not ask for int8 ones.
    public let forwardKernels: String?
    /// The digest of the adapter `initial` was read from (`WeightsParent`), recorded in each checkpoint: a resume
    /// must start from the same one. Nil for a run from a fresh initialisation.
    public let weightsParent: Digest?

    public init(configuration: TrainingConfiguration, source: any GradientSource, data: [TrainingSequence],
                heldOut: [TrainingSequence] = [], initial: NamedTensors, baseModelDigest: Digest,
                store: (any CheckpointStore)? = nil, clock: any Clock = SystemClock(), baseWeights: BaseWeightStorage? = nil,
                forwardKernels: String? = nil, weightsParent: Digest? = nil) throws {
        try configuration.validate()
        guard !data.isEmpty else { throw TrainingError.emptyDataset(reason: "no training sequences") }
        if let index = data.firstIndex(where: { !($0.weightSum > 0) }) {
            throw TrainingError.emptyDataset(reason: "training sequence \(index) has no positive loss weight")
        }
        if configuration.earlyStopping != nil, !heldOut.contains(where: { $0.weightSum > 0 }) {
            throw TrainingError.invalidConfiguration(field: "early stopping", reason: "needs held-out examples with a completion; add some or turn it off")
        }
        self.configuration = configuration
        self.source = source
        self.data = data
        self.heldOut = heldOut
        self.initial = initial
        self.baseModelDigest = baseModelDigest
        self.datasetDigest = Trainer.digest(training: data, heldOut: heldOut)
        self.store = store
        self.clock = clock
        self.baseWeights = baseWeights
        self.forwardKernels = forwardKernels
        self.weightsParent = weightsParent
    }

    /// The digest of a dataset as the trainer sees it: token ids and weights, in order.
    public static func digest(training: [TrainingSequence], heldOut: [TrainingSequence]) -> Digest {
        var hasher = SHA256()
        var writer = BinaryWriter()
        for (tag, set) in [(UInt8(1), training), (UInt8(2), heldOut)] {
            writer.u8(tag)
            writer.u64(UInt64(set.count))
            for sequence in set {
                writer.u64(UInt64(sequence.tokens.count))
                for token in sequence.tokens { writer.u32(UInt32(truncatingIfNeeded: token)) }
                writer.floats(sequence.weights)
            }
        }
        hasher.update(writer.data)
        return hasher.finalize()
    }

    // MARK: - Starting and resuming

    /// The state before the first step.
    public func freshState() -> TrainingState { .fresh(initial) }

    /// The state of the newest usable checkpoint in `store`, checked against this run; nil when the store is
    /// empty. Corrupt checkpoints are skipped (reported in the `.resumed` event's warnings); one written for
    /// another configuration, base model, base-weight storage or dataset is refused with `TrainingError.checkpointMismatch`.
    public func resumeState() throws -> (state: TrainingState, event: TrainingEvent)? {
        try resume().map { ($0.state, $0.event) }
    }

    /// `resumeState`, with the arithmetic the checkpoint was computed with (nil when it records none).
    public func resume() throws -> (state: TrainingState, event: TrainingEvent, arithmetic: BLASArithmetic?)? {
        guard let store, let loaded = try store.loadNewest() else { return nil }
        try loaded.checkpoint.check(configuration: configuration, baseModelDigest: baseModelDigest,
                                    datasetDigest: datasetDigest, layout: initial, datasetCount: data.count,
                                    name: loaded.reference.name, baseWeights: baseWeights, weightsParent: weightsParent)
        return (loaded.checkpoint.state, .resumed(step: loaded.checkpoint.state.step, checkpoint: loaded.reference.name,
                                                  warnings: loaded.warnings), loaded.checkpoint.arithmetic)
    }

    // MARK: - One step

    /// The figures of one optimizer step that the state does not keep.
    public struct StepResult: Sendable {
        public var loss: Double
        public var learningRate: Double
        public var gradientNorm: Double
        public var tokens: Int
    }

    /// Takes one optimizer step: `gradientAccumulation` micro-batches of `batchSize` sequences, gradients
    /// summed in micro-batch order, divided once by the total weight, then AdamW.
    public func step(_ state: inout TrainingState, order: inout DataOrder) throws -> StepResult {
        var lossSum = 0.0, weightSum = 0.0, tokens = 0
        var gradients: [[Float]] = state.parameters.values.map { [Float](repeating: 0, count: $0.count) }
        for _ in 0..<configuration.gradientAccumulation {
            let batch = order.take(configuration.batchSize, from: &state.cursor).map { data[$0] }
            let result = try source.lossAndGradients(batch, parameters: state.parameters, step: state.microStep)
            precondition(result.gradients.count == gradients.count, "the gradient source returned the wrong number of tensors")
            state.microStep += 1
            lossSum += result.loss
            weightSum += result.weightSum
            tokens += batch.reduce(0) { $0 + $1.tokens.count }
            for t in gradients.indices {
                precondition(result.gradients[t].count == gradients[t].count, "gradient \(state.parameters.names[t]) has the wrong size")
                gradients[t].withUnsafeMutableBufferPointer { sum in
                    result.gradients[t].withUnsafeBufferPointer { g in
                        for i in sum.indices { sum[i] += g[i] }
                    }
                }
            }
        }
        // Every sequence has a positive weight (checked in init), so weightSum > 0.
        let scale = Float(1 / weightSum)
        for t in gradients.indices {
            gradients[t].withUnsafeMutableBufferPointer { g in
                for i in g.indices { g[i] *= scale }
            }
        }
        let rate = configuration.schedule.rate(peak: configuration.learningRate, step: state.optimizer.step,
                                               totalSteps: configuration.steps)
        let anchor = configuration.optimizer.decaysTowardWeightsParent && weightsParent != nil ? initial : nil
        let norm = configuration.optimizer.step(parameters: &state.parameters, gradients: gradients,
                                                state: &state.optimizer, learningRate: rate, anchor: anchor)
        let loss = lossSum / weightSum
        state.losses.append(loss)
        state.tokens += tokens
        return StepResult(loss: loss, learningRate: rate, gradientNorm: norm, tokens: tokens)
    }

    /// Mean weighted loss of `parameters` on the held-out set, in batches of `batchSize`.
    public func heldOutLoss(_ parameters: NamedTensors) -> Double {
        var lossSum = 0.0, weightSum = 0.0
        var start = 0
        while start < heldOut.count {
            let batch = Array(heldOut[start..<min(start + configuration.batchSize, heldOut.count)])
            let result = source.loss(batch, parameters: parameters)
            lossSum += result.loss
            weightSum += result.weightSum
            start += configuration.batchSize
        }
        return lossSum / weightSum
    }

    /// Records a held-out evaluation at the current step and updates the early-stopping counters.
    /// Returns true when the run should stop.
    func evaluate(_ state: inout TrainingState, rules: EarlyStopping, report: (TrainingEvent) -> Void) -> Bool {
        let loss = heldOutLoss(state.parameters)
        let evaluation = Evaluation(step: state.step, loss: loss)
        state.evaluations.append(evaluation)
        let improved = state.bestEvaluation.map { loss < $0.loss - rules.minDelta } ?? true
        if improved {
            state.best = state.parameters
            state.bestEvaluation = evaluation
            state.staleEvaluations = 0
        } else {
            state.staleEvaluations += 1
        }
        report(.evaluated(step: state.step, loss: loss, best: improved))
        return state.staleEvaluations >= rules.patience
    }

    // MARK: - The run

    /// Writes a checkpoint of `state` to the store (if there is one) and reports it.
    public func checkpoint(_ state: TrainingState, report: (TrainingEvent) -> Void) throws {
        guard let store else { return }
        var checkpoint = Checkpoint(configuration: configuration, baseModelDigest: baseModelDigest,
                                    datasetDigest: datasetDigest, state: state)
        checkpoint.weightsParent = weightsParent
        checkpoint.arithmetic = .current(threads: configuration.threads)
        checkpoint.arithmetic?.baseWeights = baseWeights?.rawValue
        checkpoint.arithmetic?.forwardKernels = forwardKernels
        let start = clock.nowMilliseconds()
        let data = try checkpoint.encoded()
        let reference = try store.save(data, step: state.step)
        report(.checkpointWritten(step: state.step, name: reference.name, bytes: data.count,
                                  seconds: Double(clock.nowMilliseconds() - start) / 1000))
    }

    /// Trains from `state` until `configuration.steps` (or until `stopAfter` steps, for tests that stop a
    /// run part-way), or until early stopping, checkpointing every `checkpointEvery` steps and at the end.
    ///
    /// `shouldContinue` is asked before every step: a worker whose job was cancelled or whose lease was lost
    /// returns false, and the loop returns the state so far without writing anything more.
    public func run(from state: TrainingState, stopAfter: Int? = nil, progress: (TrainingEvent) -> Void = { _ in },
                    shouldContinue: () -> Bool = { true }) throws -> TrainingState {
        var state = state
        var order = DataOrder(count: data.count, seed: configuration.seed)
        let startTime = clock.nowMilliseconds()
        let startTokens = state.tokens, startStep = state.step
        let last = min(configuration.steps, stopAfter ?? configuration.steps)
        // The starting weights are measured first when asked: the best of the run may be where it started.
        if let rules = configuration.earlyStopping, rules.evaluatesAtStart, state.step == 0, state.evaluations.isEmpty,
           last > 0, shouldContinue() {
            _ = evaluate(&state, rules: rules, report: progress)
        }
        while state.step < last, !state.stoppedEarly, shouldContinue() {
            let result = try step(&state, order: &order)
            // Nothing non-finite is ever reported, evaluated or checkpointed: the last checkpoint stays usable.
            guard result.loss.isFinite, result.gradientNorm.isFinite else {
                // The first step's loss is computed before any update has acted: no learning rate made it.
                if startStep == 0, state.step == 1, !result.loss.isFinite { throw TrainingError.nonFiniteBeforeAnyUpdate(loss: result.loss) }
                throw TrainingError.diverged(step: state.step, loss: result.loss, learningRate: result.learningRate)
            }
            let elapsed = Double(clock.nowMilliseconds() - startTime) / 1000
            let stepsDone = state.step - startStep
            let speed = elapsed > 0 ? Double(state.tokens - startTokens) / elapsed : 0
            let eta = elapsed > 0 ? elapsed / Double(stepsDone) * Double(configuration.steps - state.step) : nil
            progress(.step(StepProgress(step: state.step, totalSteps: configuration.steps, loss: result.loss,
                                        smoothedLoss: StepProgress.smoothed(state.losses), learningRate: result.learningRate,
                                        gradientNorm: result.gradientNorm, tokensPerSecond: speed,
                                        elapsedSeconds: elapsed, etaSeconds: eta)))
            if let rules = configuration.earlyStopping,
               state.step % rules.every == 0 || state.step == configuration.steps {
                if evaluate(&state, rules: rules, report: progress) {
                    state.stoppedEarly = true
                    let best = state.bestEvaluation!
                    progress(.stoppedEarly(step: state.step, bestStep: best.step, bestLoss: best.loss))
                }
            }
            if state.step % configuration.checkpointEvery == 0 || state.step == configuration.steps || state.stoppedEarly {
                try checkpoint(state, report: progress)
            }
        }
        return state
    }
}
