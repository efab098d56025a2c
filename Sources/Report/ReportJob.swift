import AdaptCore

/// One job of a run on the report's timeline: its attempts as bars, oldest first.
public struct ReportJob: Sendable, Equatable, Encodable {
    public var id: String
    public var name: String
    public var kind: String
    public var state: String
    public var maxAttempts: Int
    public var attempts: [ReportAttempt]

    public init(id: String, name: String, kind: String, state: String, maxAttempts: Int, attempts: [ReportAttempt]) {
        self.id = id
        self.name = name
        self.kind = kind
        self.state = state
        self.maxAttempts = maxAttempts
        self.attempts = attempts
    }

    enum CodingKeys: String, CodingKey { case id, name, kind, state, attempts, maxAttempts = "max_attempts" }
}

/// One claim of a job, from the event that moved it to `running` to the event that moved it on.
///
/// `start_ms` and `end_ms` count from the run's creation (the timeline's origin); an attempt still running (or
/// whose worker has not been heard of since) ends at the report's `generated_at`.
public struct ReportAttempt: Sendable, Equatable, Encodable {
    /// How an attempt ended, read off the event that ended it.
    public enum End: String, Sendable, Encodable, CaseIterable {
        case succeeded
        /// Failed with attempts left: the job runs again after its backoff.
        case retried
        /// Failed with no attempts left (or not retryable).
        case discarded
        /// The step asked to wait (the device policy said "not now").
        case deferred
        /// The step gave its slot back at a safe point (a stopping worker, a re-executed worker).
        case yielded
        /// A worker let go of it (its second stop signal).
        case released
        /// Its lease expired and it was taken back.
        case rescued
        /// Its worker process died (killed) and the supervisor took it back.
        case killed
        case cancelled
        /// Still running when the report was made.
        case running

        /// Whether the timeline marks this end (everything but a plain success or a bar still growing).
        public var isMarked: Bool { self != .succeeded && self != .running }
    }

    public var attempt: Int
    public var startMilliseconds: Int64
    public var endMilliseconds: Int64
    public var startedAt: Int64
    /// nil while running.
    public var endedAt: Int64?
    public var end: End
    /// The event's words about the end (an error, a deferral's reason, how a worker died); nil for a success.
    public var reason: String?

    public init(attempt: Int, startMilliseconds: Int64, endMilliseconds: Int64, startedAt: Int64, endedAt: Int64?, end: End,
                reason: String?) {
        self.attempt = attempt
        self.startMilliseconds = startMilliseconds
        self.endMilliseconds = endMilliseconds
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.end = end
        self.reason = reason
    }

    enum CodingKeys: String, CodingKey {
        case attempt, end, reason
        case startMilliseconds = "start_ms", endMilliseconds = "end_ms", startedAt = "started_at", endedAt = "ended_at"
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(attempt, forKey: .attempt)
        try c.encode(startMilliseconds, forKey: .startMilliseconds)
        try c.encode(endMilliseconds, forKey: .endMilliseconds)
        try c.encode(Timestamp.iso8601(startedAt), forKey: .startedAt)
        try c.encode(endedAt.map(Timestamp.iso8601), forKey: .endedAt)
        try c.encode(end, forKey: .end)
        try c.encode(reason, forKey: .reason)
    }
}
