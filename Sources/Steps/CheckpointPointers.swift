import AdaptCore
import JobQueue
import Synchronization
import Training

/// The train step's checkpoint pointer kept in its job's history: each save appends a progress event
/// `checkpoints: [{"digest", "step"}, …]` (written with the claim's fencing token, so a worker that lost
/// its lease cannot move it), and the newest such event of the job, from any attempt, is the pointer.
/// A worker claiming a step another worker lost reads it to resume.
struct JobCheckpointPointer: CheckpointPointer {
    static let prefix = "checkpoints: "

    let queue: JobQueue
    let job: JobID
    let append: @Sendable (String) throws -> Void

    func read() throws -> [CheckpointPointerEntry] {
        let events = try queue.events(job: job)
        guard let latest = events.last(where: { $0.message?.hasPrefix(Self.prefix) == true })?.message else { return [] }
        return try JSON.decode([CheckpointPointerEntry].self, from: String(latest.dropFirst(Self.prefix.count)),
                               context: "the checkpoint pointer of \(job)")
    }

    func write(_ entries: [CheckpointPointerEntry]) throws {
        PausePoint.reach("train.before-checkpoint-pointer")
        try append(Self.prefix + JSON.canonicalString(entries))
    }
}

/// A checkpoint pointer in memory: replay and tests, where no job row exists.
public final class MemoryCheckpointPointer: CheckpointPointer {
    private let entries = Mutex<[CheckpointPointerEntry]>([])

    public init() {}

    public func read() throws -> [CheckpointPointerEntry] { entries.withLock { $0 } }
    public func write(_ new: [CheckpointPointerEntry]) throws { entries.withLock { $0 = new } }
}
