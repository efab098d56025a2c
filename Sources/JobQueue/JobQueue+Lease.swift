import AdaptCore
import Storage

/// The worker's side: claim a job, keep its lease, and report how it ended. Every write after the claim is
/// conditioned on `LeaseFence` (job id, token, state running, lease not expired), so a worker that lost its
/// lease gets `JobQueueError.leaseLost` and changes nothing.
extension JobQueue {
    /// Takes the next due job of one of `kinds` (lowest priority, then earliest run_at, then oldest) and leases
    /// it to `owner` for the job's own lease, or `leaseMilliseconds` when it has none. Its attempt becomes the
    /// claim's fencing token.
    ///
    /// The read of the due job and its update share one `BEGIN IMMEDIATE` transaction: the write lock is taken
    /// before the read, so two processes can never claim the same job, and no stale-snapshot retry is needed.
    public func claim(kinds: [String], owner: String, leaseMilliseconds: Int64) throws -> Claim? {
        try claim(ClaimRequest(kinds: kinds, owner: owner, leaseMilliseconds: leaseMilliseconds))
    }

    public func claim(_ request: ClaimRequest) throws -> Claim? {
        let now = self.now
        return try database.transaction { try claimInTransaction(request, now: now, limit: 1).first }
    }

    /// Takes up to `limit` due jobs in one transaction, as `claim(_:)` takes one.
    public func claim(_ request: ClaimRequest, limit: Int) throws -> [Claim] {
        let now = self.now
        return try database.transaction { try claimInTransaction(request, now: now, limit: limit) }
    }

    private func claimInTransaction(_ request: ClaimRequest, now: Int64, limit: Int) throws -> [Claim] {
        guard limit > 0 else { return [] }
        // A read, then one update per job, inside the caller's write transaction (nobody else can claim in
        // between). `UPDATE … RETURNING` would say it in one statement, but SQLite gathers RETURNING rows (and an
        // `IN (subquery)` list) in temporary tables, which cost more than the extra statement.
        // `has_dependents` lets the completion skip readying dependents when there are none: dependencies are
        // only ever written with the job itself, so the answer cannot change while the claim is held.
        let override: Int64? = request.overridesJobLeases ? request.leaseMilliseconds : nil
        let due = try database.query("""
            SELECT id, run_id, name, kind, input, attempt + 1 AS attempt, max_attempts,
                   coalesce(?, lease_ms, ?) AS lease_length, timeout_ms,
                   EXISTS (SELECT 1 FROM job_dependencies WHERE depends_on = jobs.id) AS has_dependents
            FROM jobs
            WHERE state IN ('ready','failed') AND kind IN (\(Self.placeholders(request.kinds.count))) AND run_at <= ?
            ORDER BY priority, run_at, id LIMIT ?
            """, arguments: [override, request.leaseMilliseconds] + request.kinds + [now, limit])
        let claims = try due.map { try Claim(row: $0, owner: request.owner, now: now) }
        func take(_ claim: Claim) throws {
            try database.run("""
                UPDATE jobs SET state = 'running', attempt = ?, lease_owner = ?, lease_expires_at = ?, heartbeat_at = ?,
                                updated_at = ?, transition_note = ?
                WHERE id = ?
                """, claim.token, claim.owner, claim.leaseExpiresAt, now, now, "claimed by \(claim.owner)", claim.jobID)
        }
        // Several jobs are taken all or none (a savepoint), so a failure part-way leaves no job running unknown
        // to its worker; one update is all or nothing by itself.
        if claims.count == 1 { try take(claims[0]) } else { try database.transaction { try claims.forEach(take) } }
        return claims.sorted { $0.jobID.value < $1.jobID.value }
    }

    /// Extends the lease by `leaseMilliseconds` from now, and says whether the run was cancelled.
    public func heartbeat(_ claim: Claim, leaseMilliseconds: Int64) throws -> HeartbeatResult {
        let now = self.now
        return try database.transaction {
            let rows = try database.query("""
                UPDATE jobs SET lease_expires_at = ?, heartbeat_at = ?
                WHERE \(LeaseFence.sql())
                RETURNING (SELECT cancelled_at FROM job_runs r WHERE r.id = jobs.run_id) AS cancelled_at
                """, arguments: [now + leaseMilliseconds, now] + LeaseFence(claim: claim, now: now).arguments)
            guard let row = rows.first else { throw JobQueueError.leaseLost(claim.jobID, token: claim.token) }
            return row.int64("cancelled_at") != nil ? .cancelled : .extended(until: now + leaseMilliseconds)
        }
    }

    /// Records success: the output, the readiness of every dependent whose last parent this was, and whatever
    /// `alsoInTransaction` writes (the promote step flips the registry pointer there) commit together or not
    /// at all.
    public func complete(_ claim: Claim, output: JSONValue,
                         alsoInTransaction: ((Database) throws -> Void)? = nil) throws {
        let now = self.now
        try database.transaction { try completeInTransaction(claim, output: output, now: now, also: alsoInTransaction) }
    }

    /// `complete`, then `claim(next)` in the same transaction: one commit (one fsync at durability full) per
    /// job instead of two on a busy worker. Returns the next claim, if any job was due.
    public func complete(_ claim: Claim, output: JSONValue,
                         alsoInTransaction: (@Sendable (Database) throws -> Void)? = nil,
                         thenClaim next: ClaimRequest) throws -> Claim? {
        let finished = Completion(claim: claim, output: output, claimNext: true, alsoInTransaction: alsoInTransaction)
        return try complete([finished], thenClaim: next)[0].get()
    }

    /// One finished job for `complete(_:thenClaim:)`.
    public typealias Completion = JobCompletion<Database>

    /// Group commit: records every completion in `batch` and claims one job for each that asked for one, all in
    /// one transaction, so a worker running several jobs at once pays one commit for all that finished
    /// together. A completion whose lease was lost (`leaseLost`, nothing written) or whose `alsoInTransaction`
    /// threw (rolled back to its own savepoint) fails by itself, and gets no next job. Returns, in `batch` order,
    /// the next claim (or nil) of each completion or its error. Any other error (the database's) rolls the whole
    /// transaction back and is thrown: nothing of it was recorded then.
    public func complete(_ batch: [Completion], thenClaim next: ClaimRequest) throws -> [Result<Claim?, any Error>] {
        let now = self.now
        return try database.transaction {
            var results: [Result<Claim?, any Error>] = try batch.map { finished in
                do {
                    if let also = finished.alsoInTransaction {
                        try database.transaction { try completeInTransaction(finished.claim, output: finished.output, now: now, also: also) }
                    } else {
                        try completeInTransaction(finished.claim, output: finished.output, now: now, also: nil)
                    }
                    return .success(nil)
                } catch JobQueueError.leaseLost(let job, let token) {
                    return .failure(JobQueueError.leaseLost(job, token: token))
                } catch where finished.alsoInTransaction != nil {
                    return .failure(error)
                }
            }
            let askers = batch.indices.filter { index in
                if case .success = results[index] { return batch[index].claimNext }
                return false
            }
            // A failing claim must not undo the completions: SQLite rolls back only the failed statement, and the
            // slots claim again on their own.
            let claims = (try? claimInTransaction(next, now: now, limit: askers.count)) ?? []
            for (index, claim) in zip(askers, claims) { results[index] = .success(claim) }
            return results
        }
    }

    private func completeInTransaction(_ claim: Claim, output: JSONValue, now: Int64,
                                       also: ((Database) throws -> Void)?) throws {
        let changed = try database.run("""
            UPDATE jobs SET state = 'succeeded', output = ?, error = NULL, lease_owner = NULL,
                            lease_expires_at = NULL, finished_at = ?, updated_at = ?, transition_note = ?
            WHERE \(LeaseFence.sql())
            """, arguments: [JobJSON.canonicalString(output), now, now, "completed by \(claim.owner)"]
                + LeaseFence(claim: claim, now: now).arguments)
        guard changed == 1 else { throw JobQueueError.leaseLost(claim.jobID, token: claim.token) }
        if claim.hasDependents {
            try database.run("""
                UPDATE jobs SET waiting_on = waiting_on - 1,
                                state = CASE WHEN waiting_on = 1 THEN 'ready' ELSE state END,
                                run_at = CASE WHEN waiting_on = 1 THEN max(run_at, ?) ELSE run_at END,
                                updated_at = ?, transition_note = ?
                WHERE state = 'pending' AND id IN (SELECT job_id FROM job_dependencies WHERE depends_on = ?)
                """, now, now, "parents succeeded (last: \(claim.jobID))", claim.jobID)
        }
        try also?(database)
    }

    /// Records a failure. A retryable failure with attempts left moves to `failed` and is claimable again
    /// after the backoff (or `retryAfter` milliseconds); otherwise the job is `discarded` with this error and
    /// its dependents cancelled. In a cancelled run the job is cancelled instead. Returns the new state.
    @discardableResult
    public func fail(_ claim: Claim, error: String, retryable: Bool = true, retryAfter: Int64? = nil) throws -> JobState {
        let now = self.now
        return try database.transaction {
            let current = try heldJob(claim, now: now)
            let state: JobState = current.cancelled ? .cancelled
                : retryable && claim.attempt < current.maxAttempts ? .failed : .discarded
            let runAt = state == .failed ? now + (retryAfter ?? retryPolicy.delay(job: claim.jobID, attempt: claim.attempt)) : now
            let note = state == .failed ? "attempt \(claim.attempt) failed; retry at \(Timestamp.iso8601(runAt)): \(error)"
                : state == .discarded ? "attempt \(claim.attempt) failed; discarded: \(error)" : "run cancelled: \(error)"
            try database.run("""
                UPDATE jobs SET state = ?, error = ?, run_at = ?, lease_owner = NULL, lease_expires_at = NULL,
                                finished_at = CASE WHEN ? = 'failed' THEN NULL ELSE ? END, updated_at = ?,
                                transition_note = ?
                WHERE id = ?
                """, state.rawValue, error, runAt, state.rawValue, now, now, note, claim.jobID)
            if state == .discarded { try cancelDescendants(of: claim.jobID, now: now) }
            return state
        }
    }

    /// Gives the job back unfinished (a worker shutting down): ready again at once, and the attempt it used
    /// is given back by raising `max_attempts`, since the job itself did not fail.
    public func release(_ claim: Claim, reason: String) throws {
        try putBack(claim, runAt: nil, note: "released: \(reason)")
    }

    /// Puts the job back to wait until `until` (ms since the epoch) without counting the attempt.
    public func snooze(_ claim: Claim, until: Int64) throws {
        try putBack(claim, runAt: until, note: "snoozed until \(Timestamp.iso8601(until))")
    }

    /// The worker stopped because the run was cancelled: the job is cancelled with `reason`.
    public func acknowledgeCancellation(_ claim: Claim, reason: String) throws {
        let now = self.now
        try database.transaction {
            _ = try heldJob(claim, now: now)
            try database.run("""
                UPDATE jobs SET state = 'cancelled', error = ?, lease_owner = NULL, lease_expires_at = NULL,
                                finished_at = ?, updated_at = ?, transition_note = ?
                WHERE id = ?
                """, reason, now, now, "cancelled: \(reason)", claim.jobID)
        }
    }

    /// Appends a progress event (`from == to == running`) with `message`, e.g. a training step's loss.
    public func progress(_ claim: Claim, message: String) throws {
        let now = self.now
        try database.transaction {
            let added = try database.run("""
                INSERT INTO job_events (job_id, run_id, previous_id, attempt, from_state, to_state, at, message)
                SELECT id, run_id, last_event_id, attempt, 'running', 'running', ?, ? FROM jobs
                WHERE \(LeaseFence.sql())
                """, arguments: [now, message] + LeaseFence(claim: claim, now: now).arguments)
            guard added == 1 else { throw JobQueueError.leaseLost(claim.jobID, token: claim.token) }
        }
    }

    // MARK: Internals

    private func putBack(_ claim: Claim, runAt: Int64?, note: String) throws {
        let now = self.now
        try database.transaction {
            let current = try heldJob(claim, now: now)
            let state: JobState = current.cancelled ? .cancelled : .ready
            try database.run("""
                UPDATE jobs SET state = ?, run_at = ?, max_attempts = max_attempts + 1, lease_owner = NULL,
                                lease_expires_at = NULL, finished_at = CASE WHEN ? = 'cancelled' THEN ? ELSE NULL END,
                                error = CASE WHEN ? = 'cancelled' THEN 'run cancelled' ELSE error END,
                                updated_at = ?, transition_note = ?
                WHERE id = ?
                """, state.rawValue, runAt ?? now, state.rawValue, now, state.rawValue, now,
                current.cancelled ? "run cancelled; \(note)" : note, claim.jobID)
        }
    }

    /// The job as the claim's holder sees it, or `leaseLost` when the token no longer holds.
    private func heldJob(_ claim: Claim, now: Int64) throws -> (maxAttempts: Int, cancelled: Bool) {
        guard let row = try database.query("""
            SELECT j.max_attempts, r.cancelled_at FROM jobs j JOIN job_runs r ON r.id = j.run_id
            WHERE \(LeaseFence.sql("j"))
            """, arguments: LeaseFence(claim: claim, now: now).arguments).first else {
            throw JobQueueError.leaseLost(claim.jobID, token: claim.token)
        }
        return (row.int("max_attempts") ?? 1, row.int64("cancelled_at") != nil)
    }

    static func placeholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ",")
    }
}
