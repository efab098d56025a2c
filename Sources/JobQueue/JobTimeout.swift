import AdaptCore

/// How long one attempt of a job may run (River's job timeout, Temporal's start-to-close), and what becomes of an
/// attempt that runs longer.
///
/// A job may carry its own (`jobs.timeout_ms`, from a run description's `timeout_ms`, which the pipeline layer fills
/// from a step's `timeout_seconds`); a worker may have one for jobs without (`WorkerOptions.jobTimeoutMilliseconds`).
/// Either way an attempt past it fails with `error(afterMilliseconds:jobsOwn:)` and is retried by the job's retry
/// policy, or discarded when it has no attempt left, whether its worker noticed (the heartbeat thread interrupts the
/// body) or a rescue did (a lease that ran out after the deadline: `rescue(…)`).
public enum JobTimeout {
    /// The timeouts a job may carry: at least a millisecond, at most a week.
    public static let range: ClosedRange<Int64> = 1...604_800_000

    /// The error of an attempt that ran past `milliseconds`, in whole seconds when it is some. A job's own timeout
    /// says where it is set, so the way out is in the message.
    public static func error(afterMilliseconds milliseconds: Int64, jobsOwn: Bool) -> String {
        let fraction = String(milliseconds % 1000)
        let seconds = milliseconds % 1000 == 0 ? "\(milliseconds / 1000)"
            : "\(milliseconds / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
        guard jobsOwn else { return "timed out after \(seconds) s" }
        return "timed out after \(seconds) s; if the step needs longer, raise its timeout_seconds in the pipeline file "
            + "(timeout_ms in a run description)"
    }

    /// Where a rescue (an expired lease, or a worker that died) sends a running job, and what it records.
    struct Rescue: Equatable {
        let state: JobState
        let runAt: Int64
        /// The job's new error; nil keeps the one it has (a job put back to ready).
        let error: String?
        let note: String
        /// `finished_at` is set (the job will not run again by itself).
        var finishes: Bool { state == .discarded || state == .cancelled }
    }

    /// The rescue of attempt `attempt` of job `job`, claimed at `claimedAt` (a running job's `updated_at`: heartbeats,
    /// progress notes and checkpoint pointers leave it as the claim set it). Past the job's own timeout the lost
    /// attempt failed as timed out: retried after its backoff like any failure, or discarded. Otherwise the job is
    /// ready again at once (or discarded when out of attempts); in a cancelled run it is cancelled. `why` says how the
    /// lease was lost.
    static func rescue(job: JobID, attempt: Int, maxAttempts: Int, cancelled: Bool, claimedAt: Int64?,
                       timeoutMilliseconds: Int64?, now: Int64, retryPolicy: RetryPolicy, why: String) -> Rescue {
        if cancelled { return Rescue(state: .cancelled, runAt: now, error: why + "; run cancelled", note: why + "; run cancelled") }
        let lastAttempt = attempt >= maxAttempts
        if let timeout = timeoutMilliseconds, let claimedAt, now - claimedAt >= timeout {
            let error = Self.error(afterMilliseconds: timeout, jobsOwn: true)
            if lastAttempt {
                return Rescue(state: .discarded, runAt: now, error: error, note: "\(why); past its timeout; discarded: \(error)")
            }
            let runAt = now + retryPolicy.delay(job: job, attempt: attempt)
            return Rescue(state: .failed, runAt: runAt, error: error,
                          note: "\(why); past its timeout; retry at \(Timestamp.iso8601(runAt)): \(error)")
        }
        if lastAttempt { return Rescue(state: .discarded, runAt: now, error: why + "; no attempts left", note: why + "; no attempts left") }
        return Rescue(state: .ready, runAt: now, error: nil, note: why)
    }
}
