import AdaptCore
import Foundation
import JobQueue
import Pipelines
import Storage

/// What a replay needs of a recorded run, wherever it comes from: the run's job table in the state that ran
/// it, or a bundle (`RunBundle`) on a machine that has only the bundle and the model file.
public struct RecordedRun: Sendable {
    /// One step that succeeded, with the recorded input and output and, by kind, the nearest succeeded ancestor
    /// whose replayed output it reads (the job ids are the recording state's, used only to link steps).
    public struct Step: Sendable, Equatable, Codable {
        public let id: Int64
        public let name: String
        public let kind: String
        public let input: JSONValue
        public let output: JSONValue
        public let ancestors: [String: Int64]
    }

    public let runID: String
    public let manifest: JSONValue
    /// In the order they ran (job id order).
    public let steps: [Step]
    /// The bytes of a recorded input blob, checked against its digest.
    public let blob: @Sendable (Digest) throws -> Data

    public init(runID: String, manifest: JSONValue, steps: [Step], blob: @escaping @Sendable (Digest) throws -> Data) {
        self.runID = runID
        self.manifest = manifest
        self.steps = steps
        self.blob = blob
    }

    /// The succeeded steps of `runID` in `queue`, reading blobs from `blobs` and erasure records through
    /// `connection` (the database holding `queue`, SQLite or PostgreSQL). A run whose recorded input was erased or
    /// expired throws `StepError.inputErased`: the blob is gone by design.
    public static func load(_ runID: RunID, queue: any JobEngine, connection: any SQLConnection,
                            blobs: any BlobStorage) throws -> RecordedRun {
        let run = try queue.run(runID)
        let jobs = try queue.jobs(matching: JobQueue.JobFilter(run: runID, limit: 10_000)).sorted { $0.id < $1.id }
        var steps: [Step] = []
        for job in jobs where job.state == .succeeded {
            guard let output = job.output else { continue }
            if let erased = try ErasedInput.of(job, in: connection).first {
                throw StepError.inputErased(run: runID.description, step: erased.step, field: erased.field, sentence: erased.message)
            }
            let ancestors = try StepRunner.nearestSucceededAncestors(queue: queue, job: job.id).mapValues(\.id.value)
            steps.append(Step(id: job.id.value, name: job.name, kind: job.kind, input: job.input, output: output, ancestors: ancestors))
        }
        return RecordedRun(runID: runID.description, manifest: run.manifest, steps: steps, blob: { try blobs.get($0) })
    }

    /// The blobs a step reads from outside the run (what replay copies into its scratch state), by the field
    /// of the step's recorded output that names each.
    public static func inputBlobs(of step: Step) throws -> [(field: String, digest: Digest)] {
        switch StepKind(rawValue: step.kind) {
        case .prune:
            return [("inputs.buffer_snapshot", try PruneOutput(jobOutput: step.output).inputs.bufferSnapshot)]
        case .sample:
            guard case let .some(.some(parent)) = try SampleOutput(jobOutput: step.output).weightsParent else { return [] }
            return [("weights_parent.adapter_blob", parent.adapterBlob)]
        case .eval:
            return try EvalOutput(jobOutput: step.output).incumbent.map { [("incumbent.adapter_blob", $0.adapterBlob)] } ?? []
        case .promote:
            return try PromoteOutput(jobOutput: step.output).inputs.activeAdapter.digest.map { [("inputs.active_adapter", $0)] } ?? []
        default:
            return []
        }
    }
}
