import AdaptCore
import Foundation
import Model
import Pipelines
import ReplayBuffer
import Training

/// The train step: LoRA on tonight's training snapshot, checkpointed into the blob store, resumable by any
/// worker, and polite to the machine it runs on.
///
/// - Device policy (issue 7): asked before the model is loaded and again after every checkpoint. "Not now"
///   defers the step (a later run_at and an event saying why), never fails it; mid-run the checkpoint just
///   written is where the next claim resumes.
/// - Checkpoints: `BlobCheckpointStore` over the context's pointer (in a live run, the job's own row,
///   written with its fencing token, so a worker that lost its lease cannot move it). A worker that
///   claims a step another worker lost resumes from the newest checkpoint that verifies; the Training
///   module guarantees the resumed run ends bit-identical to an uninterrupted one.
/// - Weights parent (`train.init: active`): the candidate starts from the adapter the sample step fixed, when it
///   fits this run; else from zero, with the reason in the output's `init`.
/// - Output (`TrainOutput`): the adapter (`adapter_digest`, as `adapt train` reports it, and `adapter_blob`, its
///   name in the blob store: both the SHA-256 of the whole file), the loss curve and the validation losses. Nothing is registered here: the promote step
///   registers the candidate in its completion transaction.
public enum TrainBody {
    public static func run(_ context: StepContext) throws -> StepOutcome {
        let environment = context.environment
        let store = BlobCheckpointStore(blobs: environment.blobs, pointer: context.checkpointPointer)
        // `auto` resumes at its checkpoint's count, on whatever machine claims the step after a kill; an unusable
        // checkpoint is `trainer.resume()`'s to report.
        let threads = try StepThreads.of(context, checkpointed: { ((try? store.loadNewest()) ?? nil)?.checkpoint.configuration.threads })
        let plan = try TrainingPlan(input: context.input, threads: threads.count)
        if threads.resolved { environment.log("blas_threads auto: \(threads.count) thread(s)") }

        if case let .defer(reason, _) = plan.device.decide(environment.deviceReadings()) {
            return deferred(plan, reason: reason, at: "before starting")
        }

        let snapshot = try context.output(of: SampleOutput.self).trainSnapshot
        let examples = try context.snapshot(snapshot, field: "train_snapshot")
        guard !examples.isEmpty else { throw StepError.nothingToTrain(lineage: try PlannedInput(context.input).lineage) }
        let validation = TrainingPlan.validationCount(examples: examples.count, earlyStopping: plan.configuration.earlyStopping != nil,
                                                      smallSamples: plan.parameters.initFrom != nil)
        var configuration = plan.configuration
        if validation == 0 { configuration.earlyStopping = nil }
        let trainingExamples = examples.dropLast(validation).map(Self.example)
        let validationExamples = examples.suffix(validation).map(Self.example)

        let modelName = try context.manifestString("base_model", "name")
        let expected = Digest(hex: try context.manifestString("base_model", "digest"))
        let run = try LoRATrainingRun(modelURL: try environment.modelURL(modelName), examples: trainingExamples,
                                      heldOut: validationExamples, lora: plan.lora, configuration: configuration,
                                      base: try StepBaseWeights.storage(input: context.input, step: context.name, kind: StepKind.train.rawValue),
                                      forward: try StepBaseWeights.forward(input: context.input, step: context.name, kind: StepKind.train.rawValue),
                                      chatFormat: plan.chatFormat,
                                      promptMarkers: try StepPromptMarkers.rule(input: context.input, step: context.name,
                                                                                kind: StepKind.train.rawValue))
        if context.recorded == nil, let expected, run.baseModelDigest != expected {
            throw StepError.modelChanged(name: modelName, expected: expected, actual: run.baseModelDigest)
        }

        let (parent, initialization) = try weightsParent(context, plan: plan, run: run)
        let trainer = try run.trainer(store: store, clock: environment.clock, startingFrom: parent)
        var state = trainer.freshState()
        var resumedFrom = 0
        let resumption = try trainer.resume()
        var checkpointName = "–"
        if let (resumed, event, _) = resumption {
            state = resumed
            resumedFrom = resumed.step
            if case let .resumed(step, name, warnings) = event {
                checkpointName = name
                try context.progress(TrainingNote.resumed(checkpoint: name, step: step).message
                                     + (warnings.isEmpty ? "" : " (\(warnings.count) newer checkpoint(s) unusable)"))
            }
        }
        // The kernels are pinned to the checkpoint's where they can be (ResumeArithmetic); where they still
        // differ, the job's events say the result will not be the uninterrupted run's, bit for bit.
        switch ResumeArithmetic.decide(checkpoint: resumption?.arithmetic, resuming: resumption != nil,
                                       here: run.arithmetic(threads: configuration.threads), canReexecute: context.reexecute != nil,
                                       environment: ProcessInfo.processInfo.environment, cpuFlags: BLASCoreType.cpuFlags,
                                       repinRefusal: { BLASCoreType.repinRefusal(to: $0) }) {
        case .proceed:
            break
        case let .reexecute(coreType):
            context.reexecute?(coreType)
            return .deferred(reason: coreType.map {
                "checkpoint \(checkpointName) was computed with OpenBLAS core type \($0): the worker executes itself again "
                    + "pinned to it, so the resumed run computes as an uninterrupted one"
            } ?? "the worker was pinned to an earlier checkpoint's OpenBLAS core type: it executes itself again with adapt's own "
                + "before computing this step", retryAfterMilliseconds: 0)
        case let .differs(reason, why):
            try context.progress("resumed under other arithmetic than checkpoint \(checkpointName) was computed with (\(reason)); "
                                 + "the result will differ from an uninterrupted run (not pinned: \(why))")
        }

        let start = environment.clock.nowMilliseconds()
        let startTokens = state.tokens
        let interval = configuration.checkpointEvery
        var lastNote = environment.clock.nowMilliseconds()
        while state.step < configuration.steps, !state.stoppedEarly {
            let next = min(configuration.steps, (state.step / interval + 1) * interval)
            var checkpoint: (name: String, step: Int)?
            var figures: StepProgress?
            // A cancelled run or a lost lease ends the loop before its next step: nothing it did would be recorded.
            state = try trainer.run(from: state, stopAfter: next, progress: { event in
                switch event {
                case let .checkpointWritten(step, name, _, _): checkpoint = (name, step)
                case let .step(progress):
                    figures = progress
                    // Between checkpoints a note at most once a second, so that live progress (`adapt work`,
                    // `adapt runs --watch`) moves without an event row per step; a failed write shows at the next.
                    let now = environment.clock.nowMilliseconds()
                    if progress.step < next, now - lastNote >= 1_000 {
                        lastNote = now
                        try? context.progress(Self.note(progress, total: configuration.steps, loss: progress.loss).message)
                    }
                default: break
                }
            }, shouldContinue: { !context.isCancelled() })
            if context.isCancelled() { throw CancellationError() }
            var note = figures.map { Self.note($0, total: configuration.steps, loss: state.losses.last) }
                ?? TrainingNote.StepNote(step: state.step, total: configuration.steps, loss: state.losses.last)
            note.step = state.step
            note.checkpoint = checkpoint
            try context.progress(note.message)
            if state.step >= configuration.steps || state.stoppedEarly { break }
            // Safe points: the checkpoint of this step is written, so stopping here loses nothing.
            if context.isStopping() {
                return .deferred(reason: "the worker is stopping; the step resumes from the checkpoint at step \(state.step)",
                                 retryAfterMilliseconds: 0)
            }
            if case let .defer(reason, _) = plan.device.decide(environment.deviceReadings()) {
                return deferred(plan, reason: reason, at: "after step \(state.step)")
            }
        }
        let seconds = Double(environment.clock.nowMilliseconds() - start) / 1000

        let adapter = run.adapter(from: state)
        let (data, adapterDigest) = adapter.encoded()
        let blob = try environment.blobs.put(data)
        environment.log("trained \(state.step) steps; adapter \(adapterDigest.short)")
        return .completed(StepOutput(
            TrainOutput(
                adapterDigest: adapterDigest, adapterBlob: blob, steps: state.step, losses: state.losses,
                stoppedEarly: state.stoppedEarly,
                validationLosses: state.evaluations.map { TrainOutput.ValidationLoss(step: $0.step, loss: $0.loss) },
                bestStep: state.bestEvaluation?.step, trainingExamples: run.training.count, validationExamples: run.heldOut.count,
                truncatedExamples: run.truncatedCount, droppedExamples: run.droppedCount, trainingTokens: state.tokens,
                configDigest: configuration.digest, chatConvention: run.formatter.convention.rawValue,
                inputs: TrainOutput.Inputs(baseModel: run.baseModelDigest, trainSnapshot: snapshot, weightsParent: parent?.digest,
                                           blasThreads: threads.recorded),
                initialization: initialization,
                // Said only by runs planned with `init`: no step beat the starting weights, nothing new to promote.
                keptParent: initialization == nil ? nil : state.keptStartingWeights),
            timing: [
                "seconds": .double(seconds), "resumed_from_step": .int(resumedFrom),
                "tokens_per_second": .double(seconds > 0 ? Double(state.tokens - startTokens) / seconds : 0),
            ]))
    }

    /// What the candidate starts from (`train.init`): the weights parent the sample step fixed when it fits this
    /// run, else nothing, with the reason. A step planned before `init` existed trains from zero and records nothing.
    static func weightsParent(_ context: StepContext, plan: TrainingPlan, run: LoRATrainingRun) throws
        -> (parent: WeightsParent?, initialization: TrainOutput.Initialization?) {
        guard let choice = plan.parameters.initFrom else { return (nil, nil) }
        guard choice == .active else { return (nil, TrainOutput.Initialization(from: nil, reason: .initFresh)) }
        guard case let .some(.some(fixed)) = try context.output(of: SampleOutput.self).weightsParent else {
            return (nil, TrainOutput.Initialization(from: nil, reason: .noActiveVersion))
        }
        let parent = try WeightsParent(data: try context.environment.blobs.get(fixed.adapterBlob), name: fixed.version)
        if let mismatch = run.mismatch(with: parent) {
            context.environment.log("training from zero: \(fixed.version) does not fit this run (\(mismatch.reason))")
            return (nil, TrainOutput.Initialization(from: nil, reason: .incompatible, mismatch: "\(fixed.version): \(mismatch.reason)"))
        }
        return (parent, TrainOutput.Initialization(from: fixed.version, reason: .activeVersion))
    }

    /// A progress note with the trainer's figures (the smoothed loss, speed and time left).
    static func note(_ progress: StepProgress, total: Int, loss: Double?) -> TrainingNote.StepNote {
        TrainingNote.StepNote(step: progress.step, total: total, loss: loss, smoothed: progress.smoothedLoss,
                              tokensPerSecond: progress.tokensPerSecond, etaSeconds: progress.etaSeconds)
    }

    static func example(_ line: SnapshotExample) -> TrainingExample {
        // A single exchange trains as it always has (its system line unused), so earlier runs replay equal.
        if let turns = line.turns {
            return TrainingExample(conversation: turns.map { ChatMessage(role: $0.role.rawValue, content: $0.content) },
                                   weight: Float(line.weight))
        }
        return TrainingExample(prompt: line.prompt, completion: line.completion, weight: Float(line.weight))
    }

    static func deferred(_ plan: TrainingPlan, reason: String, at moment: String) -> StepOutcome {
        .deferred(reason: "device policy \(moment): \(reason)",
                  retryAfterMilliseconds: Int64(plan.device.retryAfterMinutes) * 60_000)
    }
}
