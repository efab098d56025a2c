import AdaptCore
import Storage

/// One job as stored; encodes to the `jobs --json` object of DESIGN.md (ids as `job-N`/`run-N`, times as
/// ISO-8601 UTC strings).
public struct JobRecord: Sendable, Equatable, Encodable {
    public let id: JobID
    public let runID: RunID
    public let name: String
    public let kind: String
    public let state: JobState
    public let priority: Int
    public let runAt: Int64
    public let attempt: Int
    public let maxAttempts: Int
    public let input: JSONValue
    public let output: JSONValue?
    public let error: String?
    public let leaseOwner: String?
    public let leaseExpiresAt: Int64?
    /// The job's own lease (a step's `lease_ms`); nil when the claiming worker's applies.
    public let leaseMilliseconds: Int64?
    /// The job's own timeout per attempt (`timeout_ms`, `JobTimeout`); nil when it has none.
    public let timeoutMilliseconds: Int64?
    public let createdAt: Int64
    public let updatedAt: Int64
    public let finishedAt: Int64?

    init(row: Row) throws {
        id = JobID(try row.required("id").integerValue ?? 0)
        runID = RunID(try row.required("run_id").integerValue ?? 0)
        name = row.string("name") ?? ""
        kind = row.string("kind") ?? ""
        guard let state = row.string("state").flatMap(JobState.init(rawValue:)) else {
            throw JobQueueError.corruptRow(table: "jobs", id: id.value, column: "state")
        }
        self.state = state
        priority = row.int("priority") ?? 0
        runAt = row.int64("run_at") ?? 0
        attempt = row.int("attempt") ?? 0
        maxAttempts = row.int("max_attempts") ?? 1
        input = try Self.json(row, "input", table: "jobs", id: id.value) ?? .null
        output = try Self.json(row, "output", table: "jobs", id: id.value)
        error = row.string("error")
        leaseOwner = row.string("lease_owner")
        leaseExpiresAt = row.int64("lease_expires_at")
        leaseMilliseconds = row.int64("lease_ms")
        timeoutMilliseconds = row.int64("timeout_ms")
        createdAt = row.int64("created_at") ?? 0
        updatedAt = row.int64("updated_at") ?? 0
        finishedAt = row.int64("finished_at")
    }

    static func json(_ row: Row, _ column: String, table: String, id: Int64) throws -> JSONValue? {
        guard let text = row.string(column) else { return nil }
        do { return try JobJSON.decode(text, context: column) } catch {
            throw JobQueueError.corruptRow(table: table, id: id, column: column)
        }
    }

    enum CodingKeys: String, CodingKey {
        case id, name, kind, state, priority, attempt, error
        case runID = "run_id", runAt = "run_at", maxAttempts = "max_attempts", leaseOwner = "lease_owner"
        case leaseExpiresAt = "lease_expires_at", createdAt = "created_at", updatedAt = "updated_at"
        case finishedAt = "finished_at", leaseMilliseconds = "lease_ms", timeoutMilliseconds = "timeout_ms"
    }

    /// The listing form: everything but input and output (which `show` adds).
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id.description, forKey: .id)
        try c.encode(runID.description, forKey: .runID)
        try c.encode(name, forKey: .name)
        try c.encode(kind, forKey: .kind)
        try c.encode(state, forKey: .state)
        try c.encode(priority, forKey: .priority)
        try c.encode(attempt, forKey: .attempt)
        try c.encode(maxAttempts, forKey: .maxAttempts)
        try c.encode(Timestamp.iso8601(runAt), forKey: .runAt)
        try c.encode(error, forKey: .error)
        try c.encode(leaseOwner, forKey: .leaseOwner)
        try c.encode(leaseExpiresAt.map(Timestamp.iso8601), forKey: .leaseExpiresAt)
        try c.encode(leaseMilliseconds, forKey: .leaseMilliseconds)
        try c.encode(timeoutMilliseconds, forKey: .timeoutMilliseconds)
        try c.encode(Timestamp.iso8601(createdAt), forKey: .createdAt)
        try c.encode(Timestamp.iso8601(updatedAt), forKey: .updatedAt)
        try c.encode(finishedAt.map(Timestamp.iso8601), forKey: .finishedAt)
    }
}

/// One run with its jobs counted by state. Its `state` is derived from its jobs: `active` while any job has
/// work ahead, then `cancelled` (the run was cancelled), `failed` (a job was discarded or cancelled) or
/// `succeeded`.
public struct RunRecord: Sendable, Equatable, Encodable {
    public let id: RunID
    public let kind: String
    public let name: String
    public let uniqueKey: String?
    public let manifest: JSONValue
    public let createdAt: Int64
    public let updatedAt: Int64
    public let cancelledAt: Int64?
    /// The highest attempt of any of its jobs.
    public let attempt: Int
    public let counts: [JobState: Int]

    public var total: Int { counts.values.reduce(0, +) }
    public var isFinished: Bool { JobState.unfinished.allSatisfy { (counts[$0] ?? 0) == 0 } }

    public var state: String {
        if !isFinished { return "active" }
        if cancelledAt != nil { return "cancelled" }
        if (counts[.discarded] ?? 0) + (counts[.cancelled] ?? 0) > 0 { return "failed" }
        return "succeeded"
    }

    init(row: Row) throws {
        id = RunID(try row.required("id").integerValue ?? 0)
        kind = row.string("kind") ?? ""
        name = row.string("name") ?? ""
        uniqueKey = row.string("unique_key")
        manifest = try JobRecord.json(row, "manifest", table: "job_runs", id: id.value) ?? .null
        createdAt = row.int64("created_at") ?? 0
        updatedAt = max(createdAt, row.int64("last_update") ?? 0)
        cancelledAt = row.int64("cancelled_at")
        attempt = row.int("max_attempt") ?? 0
        var counts: [JobState: Int] = [:]
        for state in JobState.allCases { counts[state] = row.int("n_\(state.rawValue)") ?? 0 }
        self.counts = counts
    }

    enum CodingKeys: String, CodingKey {
        case id, kind, name, state, attempt, jobs, counts
        case uniqueKey = "unique_key", createdAt = "created_at", updatedAt = "updated_at"
        case cancelledAt = "cancelled_at"
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id.description, forKey: .id)
        try c.encode(kind, forKey: .kind)
        try c.encode(name, forKey: .name)
        try c.encode(state, forKey: .state)
        try c.encode(attempt, forKey: .attempt)
        try c.encode(uniqueKey, forKey: .uniqueKey)
        try c.encode(Timestamp.iso8601(createdAt), forKey: .createdAt)
        try c.encode(Timestamp.iso8601(updatedAt), forKey: .updatedAt)
        try c.encode(cancelledAt.map(Timestamp.iso8601), forKey: .cancelledAt)
        var byName: [String: Int] = [:]
        for (state, n) in counts { byName[state.rawValue] = n }
        try c.encode(byName, forKey: .counts)
    }
}

/// One row of the append-only history: a transition (`from` → `to`) or a progress note (`from == to`).
public struct EventRecord: Sendable, Equatable, Encodable {
    public let id: Int64
    public let jobID: JobID
    public let runID: RunID
    public let attempt: Int
    /// nil for the event that created the job.
    public let from: JobState?
    public let to: JobState
    public let at: Int64
    public let message: String?

    init(row: Row) throws {
        id = try row.required("id").integerValue ?? 0
        jobID = JobID(row.int64("job_id") ?? 0)
        runID = RunID(row.int64("run_id") ?? 0)
        attempt = row.int("attempt") ?? 0
        from = row.string("from_state").flatMap(JobState.init(rawValue:))
        guard let to = row.string("to_state").flatMap(JobState.init(rawValue:)) else {
            throw JobQueueError.corruptRow(table: "job_events", id: id, column: "to_state")
        }
        self.to = to
        at = row.int64("at") ?? 0
        message = row.string("message")
    }

    enum CodingKeys: String, CodingKey { case id, attempt, from, to, at, message, jobID = "job_id", runID = "run_id" }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(jobID.description, forKey: .jobID)
        try c.encode(runID.description, forKey: .runID)
        try c.encode(attempt, forKey: .attempt)
        try c.encode(from, forKey: .from)
        try c.encode(to, forKey: .to)
        try c.encode(Timestamp.iso8601(at), forKey: .at)
        try c.encode(message, forKey: .message)
    }
}

/// What `enqueue` returns: `{run_id, job_ids, existing}`.
public struct EnqueueResult: Sendable, Equatable, Encodable {
    public let runID: RunID
    /// In the order of the description's steps.
    public let jobIDs: [JobID]
    /// True when a run with the same unique key already existed and was returned instead.
    public let existing: Bool

    enum CodingKeys: String, CodingKey { case runID = "run_id", jobIDs = "job_ids", existing }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(runID.description, forKey: .runID)
        try c.encode(jobIDs.map(\.description), forKey: .jobIDs)
        try c.encode(existing, forKey: .existing)
    }
}
