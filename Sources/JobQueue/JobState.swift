/// The life of a job (DESIGN.md, "Storage and jobs").
///
/// `pending` waits for its parents, `ready` may be claimed, `running` holds a lease, `failed` will be retried
/// at its `run_at`, and `succeeded`, `discarded` and `cancelled` are where a job rests (a person may still
/// `retry` a discarded, cancelled or failed one). The same table is written three times: here, in the `CHECK`
/// constraints and in the transition trigger of `JobSchema`; `StateMachineTests` proves the three agree.
public enum JobState: String, CaseIterable, Sendable, Codable, CustomStringConvertible {
    case pending, ready, running, succeeded, failed, discarded, cancelled

    public var description: String { rawValue }

    /// States a job enters when it is created: `pending` when it has parents, `ready` otherwise.
    public static let initial: Set<JobState> = [.pending, .ready]

    /// Every allowed move, and why it happens.
    public static let transitions: [JobState: Set<JobState>] = [
        // parents succeeded; the run was cancelled or a parent was discarded
        .pending: [.ready, .cancelled],
        // claimed; the run was cancelled
        .ready: [.running, .cancelled],
        // completed; failed (retry later or give up); cancelled run acknowledged;
        // released, snoozed or rescued after its lease expired
        .running: [.succeeded, .failed, .discarded, .cancelled, .ready],
        // claimed again at run_at; the run was cancelled; a person retried it now
        .failed: [.running, .cancelled, .ready],
        // a person retried it (back to pending when a parent is not yet succeeded again)
        .discarded: [.ready, .pending],
        .cancelled: [.ready, .pending],
        .succeeded: [],
    ]

    public func canMove(to next: JobState) -> Bool { Self.transitions[self]?.contains(next) ?? false }

    /// No worker will touch the job again unless a person retries it.
    public var isFinished: Bool { self == .succeeded || self == .discarded || self == .cancelled }

    /// States that still have work ahead (a `failed` job waits for its retry).
    public static let unfinished: [JobState] = [.pending, .ready, .running, .failed]

    /// States a claim may take a job from (when its `run_at` has come).
    public static let claimable: [JobState] = [.ready, .failed]

    /// `'a','b'` for SQL `IN (…)` lists built from the enum (never from input).
    static func sqlList(_ states: [JobState]) -> String {
        states.map { "'\($0.rawValue)'" }.joined(separator: ",")
    }
}
