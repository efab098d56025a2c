import AdaptCore
import Storage

/// The durable job engine over one state database: runs, jobs, dependencies, leases, retries and history.
///
/// Every multi-row change is one `BEGIN IMMEDIATE` transaction, so processes sharing the database never see
/// half a change; `now` always comes from the injected clock and is bound into the SQL. Lease operations
/// (claim, heartbeat, complete, fail, …) live in `JobQueue+Lease.swift`, read queries in
/// `JobQueue+Reads.swift`.
public final class JobQueue: Sendable {
    public let database: Database
    public let clock: any Clock
    public let retryPolicy: RetryPolicy

    /// Opens the engine on `database`, bringing its tables up to date (or refusing a newer schema).
    public init(database: Database, clock: any Clock = SystemClock(), retryPolicy: RetryPolicy = .standard) throws {
        self.database = database
        self.clock = clock
        self.retryPolicy = retryPolicy
        try database.migrate(JobSchema.schema)
        // When to checkpoint the WAL. After a complete checkpoint SQLite restarts the WAL from its start and keeps
        // the file ("WAL reset"), so later commits overwrite blocks the file already has; a busy queue rewrites
        // the same few pages, so a checkpoint writes few distinct pages whatever the WAL's length. At durability
        // full every commit is an fdatasync, and one that grows the file also commits its new size and blocks to
        // the ext4 journal: SQLite's 1,000 pages keeps the WAL small and overwritten. At durability normal
        // commits do not sync, but each checkpoint costs two fsyncs (the WAL, then the database), a few
        // milliseconds each: at 1,000 pages they dominated a burst of single enqueues (BENCHMARKS.md, code
        // choices), so the WAL there runs to 10,000 pages between checkpoints (10 MB with the 1 KB pages of
        // `Database.defaultPageSize`).
        try database.execute("PRAGMA wal_autocheckpoint = \(database.durability == .full ? 1_000 : 10_000)")
    }

    var now: Int64 { clock.nowMilliseconds() }

    // MARK: Enqueue

    /// Stores a run and its jobs in one transaction; jobs without parents are ready at once.
    ///
    /// With a unique key, a second enqueue (from any process) returns the first run with `existing: true`
    /// and stores nothing: the lookup and the insert share one `BEGIN IMMEDIATE` transaction, so two
    /// enqueuers cannot both miss the key; the unique index is the backstop. The run's jobs take the next
    /// consecutive ids, which the run records as its range (nobody else inserts while the transaction holds
    /// the write lock).
    @discardableResult
    public func enqueue(_ description: RunDescription) throws -> EnqueueResult {
        let ordered = try description.validate()
        let now = self.now
        return try database.transaction {
            if let key = description.uniqueKey,
               let row = try database.queryOne("SELECT id, first_job_id, last_job_id FROM job_runs WHERE unique_key = ?", key),
               let id = row.int64("id"), let first = row.int64("first_job_id"), let last = row.int64("last_job_id") {
                return EnqueueResult(runID: RunID(id), jobIDs: (first...last).map(JobID.init), existing: true)
            }
            let first = try database.scalar("SELECT coalesce(max(id), 0) + 1 FROM jobs").integerValue ?? 1
            try database.run("""
                INSERT INTO job_runs (kind, name, unique_key, manifest, created_at, first_job_id, last_job_id)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """, description.kind, description.name, description.uniqueKey,
                JobJSON.canonicalString(description.manifest), now, first, first + Int64(ordered.count) - 1)
            let runID = RunID(database.lastInsertRowID)
            var ids: [String: JobID] = [:]
            for (offset, step) in ordered.enumerated() {
                let id = JobID(first + Int64(offset))
                let parents = Array(Set(step.dependsOn)).sorted()
                let state: JobState = parents.isEmpty ? .ready : .pending
                let note = parents.isEmpty ? "enqueued" : "enqueued; waits for \(parents.count) parent(s)"
                try database.run("""
                    INSERT INTO jobs (id, run_id, name, kind, state, priority, run_at, max_attempts, lease_ms, timeout_ms,
                                      input, waiting_on, transition_note, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, id, runID, step.name, step.kind, state.rawValue, step.priority, step.runAt ?? now,
                    step.maxAttempts, step.leaseMilliseconds, step.timeoutMilliseconds,
                    JobJSON.canonicalString(step.input), parents.count, note, now, now)
                ids[step.name] = id
                for parent in parents {
                    try database.run("INSERT INTO job_dependencies (job_id, depends_on) VALUES (?, ?)", id, ids[parent]!)
                }
            }
            return EnqueueResult(runID: runID, jobIDs: description.steps.map { ids[$0.name]! }, existing: false)
        }
    }

    // MARK: Cancel, retry

    /// What `cancel` did.
    public struct CancelOutcome: Sendable, Equatable, Encodable {
        /// Pending, ready and failed jobs now cancelled.
        public let cancelled: Int
        /// Jobs still running; their workers learn of the cancellation at their next heartbeat.
        public let running: Int

        public init(cancelled: Int, running: Int) {
            self.cancelled = cancelled
            self.running = running
        }
    }

    /// Cancels every job of `run` that has not started, and flags the run so running jobs stop at their
    /// next heartbeat. A finished run is left as it is.
    @discardableResult
    public func cancel(run: RunID) throws -> CancelOutcome {
        let now = self.now
        return try database.transaction {
            guard let jobs = try jobIDs(of: run) else { throw JobQueueError.unknownRun(run) }
            let unfinished = try database.scalar("""
                SELECT count(*) FROM jobs WHERE id BETWEEN ? AND ? AND state IN (\(JobState.sqlList(JobState.unfinished)))
                """, jobs.lowerBound, jobs.upperBound).integerValue ?? 0
            guard unfinished > 0 else { return CancelOutcome(cancelled: 0, running: 0) }
            try database.run("UPDATE job_runs SET cancelled_at = coalesce(cancelled_at, ?) WHERE id = ?", now, run)
            let cancelled = try database.run("""
                UPDATE jobs SET state = 'cancelled', error = 'run cancelled', finished_at = ?, updated_at = ?,
                                transition_note = 'run cancelled'
                WHERE id BETWEEN ? AND ? AND state IN ('pending', 'ready', 'failed')
                """, now, now, jobs.lowerBound, jobs.upperBound)
            let running = try database.scalar("""
                SELECT count(*) FROM jobs WHERE id BETWEEN ? AND ? AND state = 'running'
                """, jobs.lowerBound, jobs.upperBound)
            return CancelOutcome(cancelled: cancelled, running: Int(running.integerValue ?? 0))
        }
    }

    /// What `retry` did.
    public struct RetryOutcome: Sendable, Equatable, Encodable {
        public let state: JobState
        /// Cancelled descendants put back to pending.
        public let dependents: Int

        public init(state: JobState, dependents: Int) {
            self.state = state
            self.dependents = dependents
        }
    }

    /// Puts a discarded, cancelled or failed job back to ready (or pending while a parent has not
    /// succeeded), with one more attempt than it has used, and its cancelled descendants back to pending.
    /// The run is no longer cancelled.
    @discardableResult
    public func retry(job id: JobID) throws -> RetryOutcome {
        let now = self.now
        return try database.transaction {
            let record = try job(id)
            guard [.discarded, .cancelled, .failed].contains(record.state) else {
                throw JobQueueError.notRetryable(id, state: record.state)
            }
            let waiting = Int(try database.scalar(Self.unfinishedParents + " WHERE d.job_id = ?", id).integerValue ?? 0)
            let state: JobState = waiting == 0 ? .ready : .pending
            try database.run("""
                UPDATE jobs SET state = ?, waiting_on = ?, run_at = ?, max_attempts = max(max_attempts, attempt + 1),
                                error = NULL, finished_at = NULL, updated_at = ?, transition_note = 'retried by hand'
                WHERE id = ?
                """, state.rawValue, waiting, now, now, id)
            let dependents = try database.run("""
                WITH RECURSIVE below(id) AS (
                    SELECT job_id FROM job_dependencies WHERE depends_on = ?
                    UNION SELECT d.job_id FROM job_dependencies d JOIN below ON d.depends_on = below.id)
                UPDATE jobs SET state = 'pending', error = NULL, finished_at = NULL, updated_at = ?,
                                waiting_on = (\(Self.unfinishedParents) WHERE d.job_id = jobs.id),
                                transition_note = ?
                WHERE state = 'cancelled' AND id IN (SELECT id FROM below)
                """, id, now, "\(id) retried")
            try database.run("UPDATE job_runs SET cancelled_at = NULL WHERE id = ?", record.runID)
            return RetryOutcome(state: state, dependents: dependents)
        }
    }

    /// Counts a job's parents that have not succeeded; append `WHERE d.job_id = …`.
    static let unfinishedParents = """
        SELECT count(*) FROM job_dependencies d JOIN jobs p ON p.id = d.depends_on AND p.state <> 'succeeded'
        """

    /// Cancels every pending descendant of a discarded job, naming it as the reason. Call inside a transaction.
    func cancelDescendants(of id: JobID, now: Int64) throws {
        let reason = "cancelled: parent \(id) was discarded"
        try database.run("""
            WITH RECURSIVE below(id) AS (
                SELECT job_id FROM job_dependencies WHERE depends_on = ?
                UNION SELECT d.job_id FROM job_dependencies d JOIN below ON d.depends_on = below.id)
            UPDATE jobs SET state = 'cancelled', error = ?, finished_at = ?, updated_at = ?, transition_note = ?
            WHERE state = 'pending' AND id IN (SELECT id FROM below)
            """, id, reason, now, now, reason)
    }

    // MARK: Rescue, prune

    /// One job whose lease had expired, and where it went.
    public struct Rescued: Sendable, Equatable, Encodable {
        public let job: JobID
        public let attempt: Int
        public let state: JobState

        public init(job: JobID, attempt: Int, state: JobState) {
            self.job = job
            self.attempt = attempt
            self.state = state
        }

        enum CodingKeys: String, CodingKey { case job = "job_id", attempt, state }
        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(job.description, forKey: .job)
            try c.encode(attempt, forKey: .attempt)
            try c.encode(state, forKey: .state)
        }
    }

    /// Moves every running job whose lease has expired back to ready: the lost attempt counts, so a job out of
    /// attempts is discarded instead (and its dependents cancelled); a job of a cancelled run is cancelled. A job
    /// past its own timeout failed as timed out (`JobTimeout.rescue`): it waits out its backoff, as any failure.
    @discardableResult
    public func rescueExpiredLeases() throws -> [Rescued] {
        let now = self.now
        return try database.transaction {
            let expired = try database.query("""
                SELECT j.id, j.attempt, j.max_attempts, j.lease_owner, j.updated_at, j.timeout_ms, r.cancelled_at
                FROM jobs j JOIN job_runs r ON r.id = j.run_id
                WHERE j.state = 'running' AND j.lease_expires_at < ? ORDER BY j.id
                """, now)
            return try expired.compactMap { row in
                try takeBack(row, now: now) { "lease of \($0) expired (attempt \($1))" }
            }
        }
    }

    /// Takes back at once every job leased to `owner`, a worker process known to be dead (its supervisor reaped
    /// it), instead of leaving them to wait out their leases. As with an expired lease the attempt counts;
    /// `cause` (how the worker died) goes into each job's event. Only leases still held by `owner` move: a job
    /// already rescued or re-claimed has another owner or attempt, and is left alone.
    @discardableResult
    public func releaseLeases(heldBy owner: String, cause: String) throws -> [Rescued] {
        let now = self.now
        return try database.transaction {
            let held = try database.query("""
                SELECT j.id, j.attempt, j.max_attempts, j.lease_owner, j.updated_at, j.timeout_ms, r.cancelled_at
                FROM jobs j JOIN job_runs r ON r.id = j.run_id
                WHERE j.state = 'running' AND j.lease_owner = ? ORDER BY j.id
                """, owner)
            return try held.compactMap { row in
                try takeBack(row, now: now) { "worker \($0) died (\(cause)) during attempt \($1)" }
            }
        }
    }

    /// Moves one running job, read with its lease owner, attempt, claim time, timeout and run's cancellation, back to
    /// ready (or failed as timed out, discarded, or cancelled: `JobTimeout.rescue`), fenced by that attempt and owner.
    private func takeBack(_ row: Row, now: Int64, why: (String, Int) -> String) throws -> Rescued? {
        guard let raw = row.int64("id") else { return nil }
        let id = JobID(raw)
        let attempt = row.int("attempt") ?? 0
        let owner = row.string("lease_owner") ?? "?"
        let rescue = JobTimeout.rescue(job: id, attempt: attempt, maxAttempts: row.int("max_attempts") ?? 1,
                                       cancelled: row.int64("cancelled_at") != nil, claimedAt: row.int64("updated_at"),
                                       timeoutMilliseconds: row.int64("timeout_ms"), now: now, retryPolicy: retryPolicy,
                                       why: why(owner, attempt))
        let changed = try database.run("""
            UPDATE jobs SET state = ?, lease_owner = NULL, lease_expires_at = NULL, run_at = ?, error = coalesce(?, error),
                            finished_at = ?, updated_at = ?, transition_note = ?
            WHERE id = ? AND attempt = ? AND state = 'running' AND lease_owner = ?
            """, rescue.state.rawValue, rescue.runAt, rescue.error, rescue.finishes ? now : nil, now, rescue.note,
            id, attempt, owner)
        guard changed == 1 else { return nil }
        if rescue.state == .discarded { try cancelDescendants(of: id, now: now) }
        return Rescued(job: id, attempt: attempt, state: rescue.state)
    }

    /// What `prune-history` removed.
    public struct PruneOutcome: Sendable, Equatable, Encodable {
        public let runs: Int
        public let jobs: Int
        public let events: Int

        public init(runs: Int, jobs: Int, events: Int) {
            self.runs = runs
            self.jobs = jobs
            self.events = events
        }
    }

    /// Deletes finished runs (with their jobs and events) whose last change is older than `age`; the only
    /// way history is ever removed. Nothing cascades (see `JobSchema.version3`): each run's events go first,
    /// found by walking every job's chain back, then its jobs (their dependency rows cascade), then the run.
    public func pruneHistory(olderThanMilliseconds age: Int64) throws -> PruneOutcome {
        let cutoff = now - age
        return try database.transaction {
            let doomed = try database.query("""
                SELECT r.id, r.first_job_id, r.last_job_id FROM job_runs r
                WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id BETWEEN r.first_job_id AND r.last_job_id
                                  AND j.state IN (\(JobState.sqlList(JobState.unfinished))))
                  AND coalesce((SELECT max(updated_at) FROM jobs j WHERE j.id BETWEEN r.first_job_id AND r.last_job_id),
                               r.created_at) < ?
                """, cutoff)
            var jobs = 0, events = 0
            for row in doomed {
                guard let id = row.int64("id"), let first = row.int64("first_job_id"),
                      let last = row.int64("last_job_id") else { continue }
                events += try database.run("DELETE FROM job_events WHERE id IN (\(Self.eventChains))", first, last, 0, 0)
                jobs += try database.run("DELETE FROM jobs WHERE id BETWEEN ? AND ?", first, last)
                try database.run("DELETE FROM job_runs WHERE id = ?", id)
            }
            return PruneOutcome(runs: doomed.count, jobs: jobs, events: events)
        }
    }

    /// The ids of the events of the jobs whose ids lie between the first two parameters, newer than the
    /// third and fourth (the same id): each job's chain is walked back from its last event and stops at
    /// the first event not newer.
    static let eventChains = """
        WITH RECURSIVE chain(id) AS (
            SELECT last_event_id FROM jobs WHERE id BETWEEN ? AND ? AND last_event_id > ?
            UNION ALL
            SELECT e.previous_id FROM job_events e JOIN chain c ON e.id = c.id WHERE e.previous_id > ?)
        SELECT id FROM chain
        """

    /// The ids of `run`'s jobs, or nil when there is no such run.
    func jobIDs(of run: RunID) throws -> ClosedRange<Int64>? {
        guard let row = try database.queryOne("SELECT first_job_id, last_job_id FROM job_runs WHERE id = ?", run),
              let first = row.int64("first_job_id"), let last = row.int64("last_job_id") else { return nil }
        return first...last
    }
}
