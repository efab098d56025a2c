import AdaptCore
import Storage

/// A job held under a lease. `token` (the attempt number) fences every write the holder makes: once the
/// lease is rescued or the job re-claimed, writes with the old token change nothing.
public struct Claim: Sendable, Equatable {
    public let jobID: JobID
    public let runID: RunID
    /// The step's name within its run.
    public let name: String
    public let kind: String
    public let input: JSONValue
    /// The fencing token: this claim's attempt number (1 for the first run of the job).
    public let token: Int64
    public let maxAttempts: Int
    public let owner: String
    public let leaseExpiresAt: Int64
    /// How long each lease of this claim lasts (the job's own, or the worker's); heartbeats come every third.
    public let leaseMilliseconds: Int64
    /// The job's own timeout for this attempt (`JobTimeout`); nil when it has none.
    public let timeoutMilliseconds: Int64?
    /// Whether other jobs wait for this one (so its completion has dependents to make ready).
    let hasDependents: Bool

    public var attempt: Int { Int(token) }
    /// True when a failure now would be the job's last.
    public var isLastAttempt: Bool { attempt >= maxAttempts }

    /// A claim made at `now` from the job's row as the claim reads it (its next attempt and its lease length).
    init(row: Row, owner: String, now: Int64) throws {
        let id = try row.required("id").integerValue ?? 0
        jobID = JobID(id)
        runID = RunID(row.int64("run_id") ?? 0)
        name = row.string("name") ?? ""
        kind = row.string("kind") ?? ""
        input = try JobRecord.json(row, "input", table: "jobs", id: id) ?? .null
        token = row.int64("attempt") ?? 0
        maxAttempts = row.int("max_attempts") ?? 1
        self.owner = owner
        leaseMilliseconds = row.int64("lease_length") ?? 0
        leaseExpiresAt = now + leaseMilliseconds
        timeoutMilliseconds = row.int64("timeout_ms")
        hasDependents = row.bool("has_dependents") ?? true
    }

    /// The same claim with its lease moved (after a heartbeat).
    func extended(to expiry: Int64) -> Claim {
        Claim(jobID: jobID, runID: runID, name: name, kind: kind, input: input, token: token,
              maxAttempts: maxAttempts, owner: owner, leaseExpiresAt: expiry, leaseMilliseconds: leaseMilliseconds,
              timeoutMilliseconds: timeoutMilliseconds, hasDependents: hasDependents)
    }

    public init(jobID: JobID, runID: RunID, name: String, kind: String, input: JSONValue, token: Int64,
                maxAttempts: Int, owner: String, leaseExpiresAt: Int64, leaseMilliseconds: Int64,
                timeoutMilliseconds: Int64? = nil, hasDependents: Bool = true) {
        self.jobID = jobID
        self.runID = runID
        self.name = name
        self.kind = kind
        self.input = input
        self.token = token
        self.maxAttempts = maxAttempts
        self.owner = owner
        self.leaseExpiresAt = leaseExpiresAt
        self.leaseMilliseconds = leaseMilliseconds
        self.timeoutMilliseconds = timeoutMilliseconds
        self.hasDependents = hasDependents
    }
}

/// Who asks for a job, of which kinds, for how long.
public struct ClaimRequest: Sendable, Equatable {
    public var kinds: [String]
    public var owner: String
    /// The lease of jobs that have none of their own (a step's `lease_ms`)…
    public var leaseMilliseconds: Int64
    /// …or of every job, when the worker was told its lease explicitly: a command-line `--lease-ms` wins over
    /// what the run description says, as flags win over files.
    public var overridesJobLeases: Bool

    /// The leases, in milliseconds, a job or a worker may ask for: long enough for a heartbeat every third of
    /// it, at most a day.
    public static let leaseRange: ClosedRange<Int> = 30...86_400_000

    public init(kinds: [String], owner: String, leaseMilliseconds: Int64, overridesJobLeases: Bool = false) {
        precondition(!kinds.isEmpty && leaseMilliseconds > 0, "a claim needs at least one kind and a positive lease")
        self.kinds = kinds
        self.owner = owner
        self.leaseMilliseconds = leaseMilliseconds
        self.overridesJobLeases = overridesJobLeases
    }
}

/// What a heartbeat learned.
public enum HeartbeatResult: Sendable, Equatable {
    /// The lease now runs until this time (ms since the epoch).
    case extended(until: Int64)
    /// The run was cancelled: stop the work and call `acknowledgeCancellation` (or `complete` if it finished).
    case cancelled
}

/// Exponential backoff with jitter drawn from the job's own seeded stream (DESIGN.md, "Retries").
///
/// The delay before attempt `n + 1` is `min(cap, base · 2^(n−1))`, of which the upper half is jittered
/// ("equal jitter"): `d/2 + u · d/2` with `u` from `CounterRNG(seed: job id)`, purpose `.retryJitter`, step
/// `n`. So two jobs failing together spread out, and a replayed history draws the same delays.
public struct RetryPolicy: Sendable, Equatable {
    public var baseMilliseconds: Int64
    public var capMilliseconds: Int64

    public init(baseMilliseconds: Int64 = 1_000, capMilliseconds: Int64 = 600_000) {
        precondition(baseMilliseconds >= 0 && capMilliseconds >= baseMilliseconds, "retry policy bounds are inverted")
        self.baseMilliseconds = baseMilliseconds
        self.capMilliseconds = capMilliseconds
    }

    public static let standard = RetryPolicy()

    /// Milliseconds to wait after failed attempt `attempt` (1-based) of `job`.
    public func delay(job: JobID, attempt: Int) -> Int64 {
        let exponent = min(max(attempt - 1, 0), 40)
        let raw = Double(baseMilliseconds) * Double(sign: .plus, exponent: exponent, significand: 1)
        let capped = min(Double(capMilliseconds), raw)
        let u = CounterRNG(seed: UInt64(bitPattern: job.value)).uniform(.retryJitter, step: UInt64(max(attempt, 0)), index: 0)
        return Int64((capped / 2 + u * capped / 2).rounded(.down))
    }
}
