import AdaptCore
import Foundation
import JobQueue
import Model
import Pipelines

/// Turns a planned nightly run into the job engine's run description, and enqueues it.
///
/// The manifest is the planner's (pipeline digest and definition, lineage, night, seed, BLAS threads) plus
/// the base model (`{name, digest}`: the SHA-256 of the GGUF file, read once here so every step and every
/// replay can check it) and an empty `step_digests` object that each step fills in as it completes.
public enum NightlyRun {
    /// The run kind shown by `adapt runs`.
    public static let kind = "nightly"
    /// The manifest section the steps' digests go to.
    public static let digestsSection = "step_digests"
    /// The manifest section where each step that multiplies matrices records what its bits depend on
    /// (`BLASArithmetic`: OpenBLAS version and core type, thread count, our kernels).
    public static let arithmeticSection = "arithmetic"

    /// The kinds whose results depend on the BLAS kernels (train, and eval's scoring).
    public static func multipliesMatrices(_ kind: String) -> Bool {
        kind == StepKind.train.rawValue || kind == StepKind.eval.rawValue
    }

    public static func description(_ planned: PlannedRun, baseModel name: String, baseModelDigest: Digest,
                                   runAt: Int64? = nil) -> RunDescription {
        var manifest = planned.manifest.objectValue ?? [:]
        manifest["base_model"] = .object(["name": .string(name), "digest": .string(baseModelDigest.hex)])
        manifest[digestsSection] = .object([:])
        let steps = planned.steps.map { step in
            // Steps without parents wait for `runAt`; the others become ready when their parents succeed.
            RunDescription.Step(name: step.name, kind: step.kind, input: step.input, dependsOn: step.dependsOn,
                                priority: step.priority, maxAttempts: step.maxAttempts,
                                runAt: step.dependsOn.isEmpty ? runAt : nil,
                                leaseMilliseconds: Int64(step.leaseSeconds) * 1000,
                                timeoutMilliseconds: step.timeoutSeconds.map { Int64($0) * 1000 })
        }
        return RunDescription(kind: kind, name: "\(planned.name) \(planned.uniqueKey)", uniqueKey: planned.uniqueKey,
                              manifest: .object(manifest), steps: steps)
    }

    /// Plans and enqueues `pipeline` for `lineage` on `night`: idempotent on `<lineage>/<night>`.
    ///
    /// The base model is resolved and digested before anything is stored, so a missing model is an error
    /// with nothing enqueued.
    public static func enqueue(queue: any JobEngine, environment: StepEnvironment, pipeline: Pipeline, lineage: String,
                               night: Night, seed: UInt64? = nil, model: String = DefaultModel.fileName,
                               runAt: Int64? = nil) throws -> EnqueueResult {
        let planned = try plan(pipeline: pipeline, lineage: lineage, night: night, seed: seed)
        // Refused now rather than by the train step hours later: OpenBLAS would run fewer threads than recorded.
        // (`auto` resolves within the build's most, on the worker that claims the step.)
        if let fixed = pipeline.train.blasThreads.fixedCount, fixed > BLAS.maximumThreads {
            throw ModelError.tooManyThreads(requested: fixed, maximum: BLAS.maximumThreads)
        }
        let url = try environment.modelURL(model)
        try requireGGUF(url, name: model)
        try requireLoadable(url, name: model, chatFormat: try TrainingPlan.chatConvention(pipeline.train.chatFormat))
        let digest = try Digest.sha256(fileAt: url)
        let name = url.deletingLastPathComponent().standardizedFileURL.path
            == environment.state.models.standardizedFileURL.path ? url.lastPathComponent : url.path
        return try queue.enqueue(description(planned, baseModel: name, baseModelDigest: digest, runAt: runAt))
    }

    /// GGUF's magic bytes (ggml/docs/gguf.md: a file starts with "GGUF").
    static let ggufMagic = Array("GGUF".utf8)

    /// Throws `StepError.notAModel` unless the file starts with GGUF's magic. Checked at enqueue, reading 4
    /// bytes: a text file given as --model would otherwise be digested into the manifest and fail only when
    /// the train step loads it, hours later.
    public static func requireGGUF(_ url: URL, name: String) throws {
        try RegularFile.requireReadable(url)
        guard let handle = try? FileHandle(forReadingFrom: url) else {
            throw CoreError.fileUnreadable(path: name, reason: "permission denied")
        }
        defer { try? handle.close() }
        guard let head = try? handle.read(upToCount: ggufMagic.count), Array(head) == ggufMagic else {
            throw StepError.notAModel(name: name)
        }
    }

    /// Throws `StepError.unusableModel` unless the whole file is a model the train step can load: header,
    /// metadata, tensor table, every tensor's data range, architecture and tokenizer (`LlamaModel.validateStructure`,
    /// which maps the file and dequantizes nothing), and a chat format (its template, or `chatFormat`, whose
    /// control tokens the vocabulary must have). A truncated download passes the magic check and would
    /// otherwise fail every training attempt until the run is given up.
    static func requireLoadable(_ url: URL, name: String, chatFormat: ChatConvention?) throws {
        do {
            let file = try GGUFFile(url: url)
            try LlamaModel.validateStructure(of: file)
            try ChatFormatter(gguf: file, chatFormat: chatFormat).validate(against: Tokenizer(gguf: file))
        } catch let error as ModelError {
            throw StepError.unusableModel(name: name, reason: error.description)
        }
    }

    /// The pipeline's steps, by the kinds of the planner (for `adapt work --workers`).
    public static let kinds = StepKind.allCases.map(\.rawValue)
}
