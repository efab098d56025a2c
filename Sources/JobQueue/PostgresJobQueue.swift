import AdaptCore
import Foundation
import Storage

/// The job engine on a PostgreSQL server, for workers on many hosts sharing one database: the contract of
/// `JobQueue` (`JobEngine`), with the SQL of PostgreSQL.
///
/// Where the SQLite engine relies on `BEGIN IMMEDIATE` (one writer at a time), this one runs at READ COMMITTED
/// and says which rows each change locks: a claim is one `UPDATE … FROM (SELECT … FOR UPDATE SKIP LOCKED)`, so
/// concurrent workers take different jobs without waiting for each other; a lease holder's read-then-write
/// (fail, release, snooze) locks its job row first (`FOR UPDATE`), so a rescue cannot slip in between; enqueues
/// take a transaction-level advisory lock, which keeps a run's job ids consecutive and a unique key's lookup and
/// insert together. The tables, triggers and checks are `PostgresJobSchema`'s. Lease operations are in
/// `PostgresJobQueue+Lease.swift`, reads in `PostgresJobQueue+Reads.swift`, the idle wait in
/// `PostgresJobQueue+Wake.swift`.
public final class PostgresJobQueue: Sendable {
    public let connection: PostgresConnection
    /// The connection string with its password removed.
    public var displayTarget: String { connection.displayTarget }
    public let clock: any Clock
    public let retryPolicy: RetryPolicy
    /// Kept to open the listening connection of `waitForWork` on first use.
    let connectionString: String
    let listener = Locked<ListeningSession?>(nil)

    /// Connects to `connectionString` (`postgres://…`) and brings the engine's tables up to date (or refuses a
    /// newer schema).
    public init(connectionString: String, clock: any Clock = SystemClock(), retryPolicy: RetryPolicy = .standard) throws {
        connection = try PostgresConnection(connectionString)
        self.connectionString = connectionString
        self.clock = clock
        self.retryPolicy = retryPolicy
        try connection.migrate(PostgresJobSchema.schema)
    }

    var now: Int64 { clock.nowMilliseconds() }

    /// The advisory lock every enqueue holds until it commits ("enqueue" in ASCII).
    static let enqueueLock: Int64 = 0x65_6E_71_75_65_75_65

    // MARK: Enqueue

    /// Stores a run and its jobs in one transaction; jobs without parents are ready at once. With a unique key,
    /// a second enqueue returns the first run with `existing: true` and stores nothing.
    @discardableResult
    public func enqueue(_ description: RunDescription) throws -> EnqueueResult {
        let ordered = try description.validate()
        let now = self.now
        // One round trip (`adapt_enqueue`): the enqueue is part of every enqueue→start wait.
        var offsets: [String: Int] = [:]
        var steps: [JSONValue] = []
        var dependencies: [JSONValue] = []
        for (offset, step) in ordered.enumerated() {
            let parents = Array(Set(step.dependsOn)).sorted()
            offsets[step.name] = offset
            steps.append(.object([
                "place": .int(offset), "name": .string(step.name), "kind": .string(step.kind),
                "state": .string((parents.isEmpty ? JobState.ready : .pending).rawValue), "priority": .int(step.priority),
                "run_at": .int(Int(step.runAt ?? now)), "max_attempts": .int(step.maxAttempts),
                "lease_ms": step.leaseMilliseconds.map { .int(Int($0)) } ?? .null,
                "timeout_ms": step.timeoutMilliseconds.map { .int(Int($0)) } ?? .null,
                "input": .string(JobJSON.canonicalString(step.input)), "waiting_on": .int(parents.count),
                "note": .string(parents.isEmpty ? "enqueued" : "enqueued; waits for \(parents.count) parent(s)"),
            ]))
            for parent in parents {
                dependencies.append(.object(["job": .int(offset), "parent": .int(offsets[parent]!)]))
            }
        }
        let row = try connection.queryOne("""
            SELECT run_id, first_job_id, last_job_id, existing::int AS existing
            FROM adapt_enqueue($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb)
            """, description.kind, description.name, description.uniqueKey, JobJSON.canonicalString(description.manifest),
            now, JobJSON.canonicalString(JSONValue.array(steps)), JobJSON.canonicalString(JSONValue.array(dependencies)))
        guard let row, let run = row.int64("run_id"), let first = row.int64("first_job_id"),
              let last = row.int64("last_job_id") else {
            throw StorageError.postgres(sqlstate: "", message: "adapt_enqueue returned no run", sql: "adapt_enqueue")
        }
        if row.bool("existing") == true {
            return EnqueueResult(runID: RunID(run), jobIDs: (first...last).map(JobID.init), existing: true)
        }
        return EnqueueResult(runID: RunID(run), jobIDs: description.steps.map { JobID(first + Int64(offsets[$0.name]!)) },
                             existing: false)
    }

    // MARK: Cancel, retry

    /// Cancels every job of `run` that has not started, and flags the run so running jobs stop at their next
    /// heartbeat. A finished run is left as it is.
    @discardableResult
    public func cancel(run: RunID) throws -> JobQueue.CancelOutcome {
        let now = self.now
        return try connection.transaction {
            guard let jobs = try jobIDs(of: run) else { throw JobQueueError.unknownRun(run) }
            let unfinished = try connection.scalar("""
                SELECT count(*) FROM jobs WHERE id BETWEEN $1 AND $2 AND state IN (\(JobState.sqlList(JobState.unfinished)))
                """, jobs.lowerBound, jobs.upperBound).integerValue ?? 0
            guard unfinished > 0 else { return JobQueue.CancelOutcome(cancelled: 0, running: 0) }
            try connection.run("UPDATE job_runs SET cancelled_at = coalesce(cancelled_at, $1) WHERE id = $2", now, run)
            let cancelled = try connection.run("""
                UPDATE jobs SET state = 'cancelled', error = 'run cancelled', finished_at = $1, updated_at = $1,
                                transition_note = 'run cancelled'
                WHERE id BETWEEN $2 AND $3 AND state IN ('pending', 'ready', 'failed')
                """, now, jobs.lowerBound, jobs.upperBound)
            let running = try connection.scalar("""
                SELECT count(*) FROM jobs WHERE id BETWEEN $1 AND $2 AND state = 'running'
                """, jobs.lowerBound, jobs.upperBound)
            return JobQueue.CancelOutcome(cancelled: cancelled, running: Int(running.integerValue ?? 0))
        }
    }

    /// Puts a discarded, cancelled or failed job back to ready (or pending while a parent has not succeeded),
    /// with one more attempt than it has used, and its cancelled descendants back to pending.
    @discardableResult
    public func retry(job id: JobID) throws -> JobQueue.RetryOutcome {
        let now = self.now
        return try connection.transaction {
            guard try connection.queryOne("SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE", id) != nil else {
                throw JobQueueError.unknownJob(id)
            }
            let record = try job(id)
            guard [.discarded, .cancelled, .failed].contains(record.state) else {
                throw JobQueueError.notRetryable(id, state: record.state)
            }
            let waiting = Int(try connection.scalar(Self.unfinishedParents + " WHERE d.job_id = $1", id).integerValue ?? 0)
            let state: JobState = waiting == 0 ? .ready : .pending
            try connection.run("""
                UPDATE jobs SET state = $1, waiting_on = $2, run_at = $3, max_attempts = greatest(max_attempts, attempt + 1),
                                error = NULL, finished_at = NULL, updated_at = $3, transition_note = 'retried by hand'
                WHERE id = $4
                """, state.rawValue, waiting, now, id)
            let dependents = try connection.run("""
                WITH RECURSIVE below(id) AS (
                    SELECT job_id FROM job_dependencies WHERE depends_on = $1
                    UNION SELECT d.job_id FROM job_dependencies d JOIN below ON d.depends_on = below.id)
                UPDATE jobs SET state = 'pending', error = NULL, finished_at = NULL, updated_at = $2,
                                waiting_on = (\(Self.unfinishedParents) WHERE d.job_id = jobs.id),
                                transition_note = $3
                WHERE state = 'cancelled' AND id IN (SELECT id FROM below)
                """, id, now, "\(id) retried")
            try connection.run("UPDATE job_runs SET cancelled_at = NULL WHERE id = $1", record.runID)
            return JobQueue.RetryOutcome(state: state, dependents: dependents)
        }
    }

    /// Counts a job's parents that have not succeeded; append `WHERE d.job_id = …`.
    static let unfinishedParents = JobQueue.unfinishedParents

    /// Cancels every pending descendant of a discarded job, naming it as the reason. Call inside a transaction.
    func cancelDescendants(of id: JobID, now: Int64) throws {
        let reason = "cancelled: parent \(id) was discarded"
        try connection.run("""
            WITH RECURSIVE below(id) AS (
                SELECT job_id FROM job_dependencies WHERE depends_on = $1
                UNION SELECT d.job_id FROM job_dependencies d JOIN below ON d.depends_on = below.id)
            UPDATE jobs SET state = 'cancelled', error = $2, finished_at = $3, updated_at = $3, transition_note = $2
            WHERE state = 'pending' AND id IN (SELECT id FROM below)
            """, id, reason, now)
    }

    // MARK: Rescue, prune

    /// Moves every running job whose lease has expired back to ready (or discarded when out of attempts, or
    /// cancelled in a cancelled run, or failed as timed out past its own timeout, as on SQLite). Rows another
    /// rescuer holds are skipped: it is taking them back.
    @discardableResult
    public func rescueExpiredLeases() throws -> [JobQueue.Rescued] {
        let now = self.now
        return try connection.transaction {
            let expired = try connection.query("""
                SELECT j.id, j.attempt, j.max_attempts, j.lease_owner, j.updated_at, j.timeout_ms, r.cancelled_at
                FROM jobs j JOIN job_runs r ON r.id = j.run_id
                WHERE j.state = 'running' AND j.lease_expires_at < $1 ORDER BY j.id
                FOR UPDATE OF j SKIP LOCKED
                """, now)
            return try expired.compactMap { row in
                try takeBack(row, now: now) { "lease of \($0) expired (attempt \($1))" }
            }
        }
    }

    /// Takes back at once every job leased to `owner`, a worker known to be dead.
    @discardableResult
    public func releaseLeases(heldBy owner: String, cause: String) throws -> [JobQueue.Rescued] {
        let now = self.now
        return try connection.transaction {
            let held = try connection.query("""
                SELECT j.id, j.attempt, j.max_attempts, j.lease_owner, j.updated_at, j.timeout_ms, r.cancelled_at
                FROM jobs j JOIN job_runs r ON r.id = j.run_id
                WHERE j.state = 'running' AND j.lease_owner = $1 ORDER BY j.id
                FOR UPDATE OF j
                """, owner)
            return try held.compactMap { row in
                try takeBack(row, now: now) { "worker \($0) died (\(cause)) during attempt \($1)" }
            }
        }
    }

    /// Moves one running job, read and locked with its lease owner, attempt, claim time, timeout and run's
    /// cancellation, back to ready (or failed as timed out, discarded, or cancelled: `JobTimeout.rescue`), fenced by
    /// that attempt and owner.
    private func takeBack(_ row: Row, now: Int64, why: (String, Int) -> String) throws -> JobQueue.Rescued? {
        guard let raw = row.int64("id") else { return nil }
        let id = JobID(raw)
        let attempt = row.int("attempt") ?? 0
        let owner = row.string("lease_owner") ?? "?"
        let rescue = JobTimeout.rescue(job: id, attempt: attempt, maxAttempts: row.int("max_attempts") ?? 1,
                                       cancelled: row.int64("cancelled_at") != nil, claimedAt: row.int64("updated_at"),
                                       timeoutMilliseconds: row.int64("timeout_ms"), now: now, retryPolicy: retryPolicy,
                                       why: why(owner, attempt))
        let changed = try connection.run("""
            UPDATE jobs SET state = $1, lease_owner = NULL, lease_expires_at = NULL, run_at = $2,
                            error = coalesce($3, error), finished_at = $4, updated_at = $5, transition_note = $6
            WHERE id = $7 AND attempt = $8 AND state = 'running' AND lease_owner = $9
            """, rescue.state.rawValue, rescue.runAt, rescue.error, rescue.finishes ? now : nil, now, rescue.note,
            id, attempt, owner)
        guard changed == 1 else { return nil }
        if rescue.state == .discarded { try cancelDescendants(of: id, now: now) }
        return JobQueue.Rescued(job: id, attempt: attempt, state: rescue.state)
    }

    /// Deletes finished runs (with their jobs and events) whose last change is older than `age`.
    public func pruneHistory(olderThanMilliseconds age: Int64) throws -> JobQueue.PruneOutcome {
        let cutoff = now - age
        return try connection.transaction {
            let doomed = try connection.query("""
                SELECT r.id, r.first_job_id, r.last_job_id FROM job_runs r
                WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id BETWEEN r.first_job_id AND r.last_job_id
                                  AND j.state IN (\(JobState.sqlList(JobState.unfinished))))
                  AND coalesce((SELECT max(updated_at) FROM jobs j WHERE j.id BETWEEN r.first_job_id AND r.last_job_id),
                               r.created_at) < $1
                FOR UPDATE OF r
                """, cutoff)
            var jobs = 0, events = 0
            for row in doomed {
                guard let id = row.int64("id"), let first = row.int64("first_job_id"),
                      let last = row.int64("last_job_id") else { continue }
                events += try connection.run("DELETE FROM job_events WHERE id IN (\(Self.eventChains))", first, last, 0)
                jobs += try connection.run("DELETE FROM jobs WHERE id BETWEEN $1 AND $2", first, last)
                try connection.run("DELETE FROM job_runs WHERE id = $1", id)
            }
            return JobQueue.PruneOutcome(runs: doomed.count, jobs: jobs, events: events)
        }
    }

    /// The ids of the events of the jobs whose ids lie between $1 and $2, newer than $3 (`JobQueue.eventChains`).
    static let eventChains = """
        WITH RECURSIVE chain(id) AS (
            SELECT last_event_id FROM jobs WHERE id BETWEEN $1 AND $2 AND last_event_id > $3
            UNION ALL
            SELECT e.previous_id FROM job_events e JOIN chain c ON e.id = c.id WHERE e.previous_id > $3)
        SELECT id FROM chain
        """

    /// The ids of `run`'s jobs, or nil when there is no such run.
    func jobIDs(of run: RunID) throws -> ClosedRange<Int64>? {
        guard let row = try connection.queryOne("SELECT first_job_id, last_job_id FROM job_runs WHERE id = $1", run),
              let first = row.int64("first_job_id"), let last = row.int64("last_job_id") else { return nil }
        return first...last
    }
}
