import AdaptCore
import Storage

/// How a job body ended; the worker turns it into the matching fenced write.
public enum JobResult: Sendable {
    /// Success. `alsoInTransaction` runs inside the completion transaction (e.g. the promote step's
    /// registry pointer flip), so both commit together or neither does. It gets the engine's own connection
    /// (`Database` or `PostgresConnection`), so it writes the tables of whichever backend holds the job. When it
    /// throws, nothing is recorded
    /// and the attempt fails (retryable) with its error. `afterCommit` runs once the completion is durable,
    /// for what cannot be rolled back (deleting files the transaction marked for deletion).
    case completed(JSONValue, alsoInTransaction: (@Sendable (any SQLConnection) throws -> Void)? = nil,
                   afterCommit: (@Sendable () -> Void)? = nil)
    /// A failure worth retrying: after the backoff, or after `afterMilliseconds`. Discarded when out of attempts.
    case retry(error: String, afterMilliseconds: Int64? = nil)
    /// A failure no retry will fix: discarded now, dependents cancelled.
    case discard(error: String)
    /// Not yet: back to ready until this time (ms since the epoch), without using up an attempt.
    case snooze(untilMilliseconds: Int64)
    /// The body gave up because the run was cancelled (or for its own reason).
    case cancel(reason: String)
}

/// What a body signature looks like: the claimed job (its input, token, attempt) and a context to report
/// progress and learn of cancellation.
public typealias JobBody = @Sendable (Claim, JobContext) async throws -> JobResult

/// A running job's view of the world beyond its input: progress events and cancellation.
///
/// The body's task is also cancelled (Swift task cancellation) when the run is cancelled, the lease is lost, the
/// attempt runs past its timeout or the worker must stop at once, so `Task.sleep` and `Task.checkCancellation()` end the body promptly.
public final class JobContext: Sendable {
    public let claim: Claim
    let queue: any JobEngine
    private let flags = Locked(Flags())

    package struct Flags {
        package var runCancelled = false
        package var leaseLost = false
        package var stopNow = false
        /// The attempt ran past the worker's job timeout (`WorkerOptions.jobTimeoutMilliseconds`).
        package var timedOut = false
    }

    package init(claim: Claim, queue: any JobEngine) {
        self.claim = claim
        self.queue = queue
    }

    /// The run was cancelled: finish quickly, or return `.cancel`.
    public var isRunCancelled: Bool { flags.withLock { $0.runCancelled } }
    /// The lease is gone: nothing this body returns will be recorded.
    public var isLeaseLost: Bool { flags.withLock { $0.leaseLost } }
    /// The attempt ran past its timeout: it will be failed as timed out (and retried by its policy) whatever it returns
    /// but a success.
    public var isTimedOut: Bool { flags.withLock { $0.timedOut } }
    /// Any reason to stop now.
    public var isCancelled: Bool { flags.withLock { $0.runCancelled || $0.leaseLost || $0.stopNow || $0.timedOut } }

    /// Appends a progress event to the job's history (fenced by the claim's token like every other write).
    public func progress(_ message: String) throws {
        try queue.progress(claim, message: message)
    }

    /// Replaces the job's checkpoint pointer (`JobQueue.recordCheckpointPointer`), fenced by the claim's token.
    public func recordCheckpointPointer(_ pointer: JSONValue) throws {
        try queue.recordCheckpointPointer(claim, pointer)
    }

    // The worker loop's side (WorkerRuntime): what its heartbeats and stop requests learned.
    package func markRunCancelled() { flags.withLock { $0.runCancelled = true } }
    package func markLeaseLost() { flags.withLock { $0.leaseLost = true } }
    package func markStopNow() { flags.withLock { $0.stopNow = true } }
    package func markTimedOut() { flags.withLock { $0.timedOut = true } }
    package var snapshot: Flags { flags.withLock { $0 } }
}
