import AdaptCore
import JobQueue
import Training

/// The train step's checkpoint pointer kept in its job's row (`JobQueue.recordCheckpointPointer`): written with
/// the claim's fencing token, so a worker that lost its lease cannot move it, and read by whichever attempt
/// runs the job next, to resume. A database whose pointers were still progress events is migrated when opened
/// (`JobSchema.version4`).
struct JobCheckpointPointer: CheckpointPointer {
    let queue: any JobEngine
    let job: JobID
    let record: @Sendable (JSONValue) throws -> Void

    func read() throws -> [CheckpointPointerEntry] {
        guard let pointer = try queue.checkpointPointer(job: job) else { return [] }
        return try JSON.decode([CheckpointPointerEntry].self, from: JSON.canonical(pointer), context: "the checkpoint pointer of \(job)")
    }

    func write(_ entries: [CheckpointPointerEntry]) throws {
        PausePoint.reach("train.before-checkpoint-pointer")
        try record(try JSON.decode(JSONValue.self, from: JSON.canonical(entries), context: "a checkpoint pointer"))
    }
}

/// A checkpoint pointer in memory: replay and tests, where no job row exists.
public final class MemoryCheckpointPointer: CheckpointPointer {
    private let entries = Locked<[CheckpointPointerEntry]>([])

    public init() {}

    public func read() throws -> [CheckpointPointerEntry] { entries.withLock { $0 } }
    public func write(_ new: [CheckpointPointerEntry]) throws { entries.withLock { $0 = new } }
}
