import AdaptCore
import Storage

/// Claiming a job and reporting how it ended, on PostgreSQL. Every write after the claim is fenced as on
/// SQLite (`LeaseFence`: job id, token, state running, lease not expired), so a worker that lost its lease
/// gets `JobQueueError.leaseLost` and changes nothing.
extension PostgresJobQueue {
    /// The fence of `LeaseFence` in PostgreSQL's numbered parameters, its three values bound from `$first` on.
    static func fence(_ table: String = "jobs", from first: Int) -> String {
        "\(table).id = $\(first) AND \(table).attempt = $\(first + 1) AND \(table).state = 'running' "
            + "AND \(table).lease_expires_at >= $\(first + 2)"
    }

    public func claim(kinds: [String], owner: String, leaseMilliseconds: Int64) throws -> Claim? {
        try claim(ClaimRequest(kinds: kinds, owner: owner, leaseMilliseconds: leaseMilliseconds))
    }

    /// Takes the next due job of one of the request's kinds (lowest priority, then earliest run_at, then oldest)
    /// in one statement: the due rows are locked as they are found, rows another claim holds are skipped, and the
    /// locked ones are leased to the owner with their attempt (the fencing token) counted up.
    public func claim(_ request: ClaimRequest) throws -> Claim? {
        let now = self.now
        return try claimStatement(request, now: now, limit: 1).first
    }

    func claimStatement(_ request: ClaimRequest, now: Int64, limit: Int) throws -> [Claim] {
        guard limit > 0 else { return [] }
        let override: Int64? = request.overridesJobLeases ? request.leaseMilliseconds : nil
        let kinds = request.kinds.indices.map { "$\($0 + 7)" }.joined(separator: ",")
        let rows = try connection.query("""
            UPDATE jobs SET state = 'running', attempt = jobs.attempt + 1, lease_owner = $1,
                            lease_expires_at = $2 + coalesce($3, jobs.lease_ms, $4), heartbeat_at = $2,
                            updated_at = $2, transition_note = $5
            FROM (SELECT id FROM jobs
                  WHERE state IN ('ready','failed') AND kind IN (\(kinds)) AND run_at <= $2
                  ORDER BY priority, run_at, id LIMIT $6
                  FOR UPDATE SKIP LOCKED) AS due
            WHERE jobs.id = due.id
            RETURNING jobs.id, jobs.run_id, jobs.name, jobs.kind, jobs.input, jobs.attempt, jobs.max_attempts,
                      jobs.lease_expires_at - $2 AS lease_length,
                      EXISTS (SELECT 1 FROM job_dependencies WHERE depends_on = jobs.id) AS has_dependents
            """, arguments: [request.owner, now, override, request.leaseMilliseconds, "claimed by \(request.owner)", limit]
                + request.kinds)
        return try rows.map { try Claim(row: $0, owner: request.owner, now: now) }.sorted { $0.jobID.value < $1.jobID.value }
    }

    /// Extends the lease by `leaseMilliseconds` from now, and says whether the run was cancelled.
    public func heartbeat(_ claim: Claim, leaseMilliseconds: Int64) throws -> HeartbeatResult {
        let now = self.now
        let rows = try connection.query("""
            UPDATE jobs SET lease_expires_at = $4, heartbeat_at = $3
            WHERE \(Self.fence(from: 1))
            RETURNING (SELECT cancelled_at FROM job_runs r WHERE r.id = jobs.run_id) AS cancelled_at
            """, claim.jobID, claim.token, now, now + leaseMilliseconds)
        guard let row = rows.first else { throw JobQueueError.leaseLost(claim.jobID, token: claim.token) }
        return row.int64("cancelled_at") != nil ? .cancelled : .extended(until: now + leaseMilliseconds)
    }

    public func complete(_ claim: Claim, output: JSONValue) throws {
        try complete(claim, output: output, alsoInTransaction: nil)
    }

    /// Records success: the output, the readiness of every dependent whose last parent this was, and whatever
    /// `alsoInTransaction` writes commit together or not at all.
    public func complete(_ claim: Claim, output: JSONValue,
                         alsoInTransaction: ((PostgresConnection) throws -> Void)?) throws {
        let now = self.now
        try connection.transaction { try completeInTransaction(claim, output: output, now: now, also: alsoInTransaction) }
    }

    /// `complete`, then a claim for the same worker in the same transaction: one commit per job. A claim that
    /// fails does not undo the completion (it runs in a savepoint; PostgreSQL would otherwise abort the whole
    /// transaction), and the worker claims again on its own.
    public func complete(_ claim: Claim, output: JSONValue,
                         alsoInTransaction: (@Sendable (PostgresConnection) throws -> Void)?,
                         thenClaim next: ClaimRequest) throws -> Claim? {
        let finished = JobCompletion(claim: claim, output: output, claimNext: true, alsoInTransaction: alsoInTransaction)
        return try complete([finished], thenClaim: next)[0].get()
    }

    /// Group commit, as `JobQueue.complete(_:thenClaim:)`: every completion of `batch`, then one claim statement
    /// taking a job for each completion that asked (in a savepoint: a failed claim must not abort the completions).
    /// The completions without a hook are one statement together (a round trip per job would cost more than the
    /// job); one with a hook runs in a savepoint of its own, so a refusing hook fails alone. A lost lease writes
    /// nothing and fails alone.
    public func complete(_ batch: [JobCompletion<PostgresConnection>], thenClaim next: ClaimRequest) throws -> [Result<Claim?, any Error>] {
        let now = self.now
        return try connection.transaction {
            var results = Array(repeating: Result<Claim?, any Error>.success(nil), count: batch.count)
            let plain = batch.indices.filter { batch[$0].alsoInTransaction == nil }
            let recorded = try completeTogether(plain.map { batch[$0].claim }, outputs: plain.map { batch[$0].output }, now: now)
            for index in plain {
                let claim = batch[index].claim
                guard recorded.contains(claim.jobID.value) else {
                    results[index] = .failure(JobQueueError.leaseLost(claim.jobID, token: claim.token))
                    continue
                }
                if claim.hasDependents { try readyDependents(of: claim, now: now) }
            }
            for index in batch.indices where batch[index].alsoInTransaction != nil {
                let finished = batch[index]
                do {
                    try connection.transaction {
                        try completeInTransaction(finished.claim, output: finished.output, now: now, also: finished.alsoInTransaction)
                    }
                } catch JobQueueError.leaseLost(let job, let token) {
                    results[index] = .failure(JobQueueError.leaseLost(job, token: token))
                } catch where connection.isConnected {
                    results[index] = .failure(error)
                }
            }
            let askers = batch.indices.filter { index in
                if case .success = results[index] { return batch[index].claimNext }
                return false
            }
            let claims = (try? connection.transaction { try claimStatement(next, now: now, limit: askers.count) }) ?? []
            for (index, claim) in zip(askers, claims) { results[index] = .success(claim) }
            return results
        }
    }

    /// Records the success of every claim whose lease still holds, in one statement (each row fenced as `fence`
    /// says); returns the ids it recorded.
    private func completeTogether(_ claims: [Claim], outputs: [JSONValue], now: Int64) throws -> Set<Int64> {
        guard !claims.isEmpty else { return [] }
        let rows = zip(claims, outputs).map { claim, output in
            JSONValue.object(["id": .int(Int(claim.jobID.value)), "attempt": .int(claim.attempt),
                              "output": .string(JobJSON.canonicalString(output)), "note": .string("completed by \(claim.owner)")])
        }
        let changed = try connection.query("""
            UPDATE jobs SET state = 'succeeded', output = v.output, error = NULL, lease_owner = NULL,
                            lease_expires_at = NULL, finished_at = $2, updated_at = $2, transition_note = v.note
            FROM jsonb_to_recordset($1::jsonb) AS v(id bigint, attempt int, output text, note text)
            WHERE jobs.id = v.id AND jobs.attempt = v.attempt AND jobs.state = 'running' AND jobs.lease_expires_at >= $2
            RETURNING jobs.id
            """, JobJSON.canonicalString(.array(rows)), now)
        return Set(changed.compactMap { $0.int64("id") })
    }

    private func completeInTransaction(_ claim: Claim, output: JSONValue, now: Int64,
                                       also: ((PostgresConnection) throws -> Void)?) throws {
        let changed = try connection.run("""
            UPDATE jobs SET state = 'succeeded', output = $4, error = NULL, lease_owner = NULL,
                            lease_expires_at = NULL, finished_at = $3, updated_at = $3, transition_note = $5
            WHERE \(Self.fence(from: 1))
            """, claim.jobID, claim.token, now, JobJSON.canonicalString(output), "completed by \(claim.owner)")
        guard changed == 1 else { throw JobQueueError.leaseLost(claim.jobID, token: claim.token) }
        if claim.hasDependents { try readyDependents(of: claim, now: now) }
        try also?(connection)
    }

    /// Counts the succeeded job off its dependents' waits; a dependent whose last parent it was becomes ready.
    private func readyDependents(of claim: Claim, now: Int64) throws {
        try connection.run("""
            UPDATE jobs SET waiting_on = waiting_on - 1,
                            state = CASE WHEN waiting_on = 1 THEN 'ready' ELSE state END,
                            run_at = CASE WHEN waiting_on = 1 THEN greatest(run_at, $1) ELSE run_at END,
                            updated_at = $1, transition_note = $2
            WHERE state = 'pending' AND id IN (SELECT job_id FROM job_dependencies WHERE depends_on = $3)
            """, now, "parents succeeded (last: \(claim.jobID))", claim.jobID)
    }

    /// Records a failure: `failed` and claimable again after the backoff (or `retryAfter` ms) while attempts
    /// remain and the error is retryable, otherwise `discarded` with its dependents cancelled; `cancelled` in a
    /// cancelled run. Returns the new state.
    @discardableResult
    public func fail(_ claim: Claim, error: String, retryable: Bool = true, retryAfter: Int64? = nil) throws -> JobState {
        let now = self.now
        return try connection.transaction {
            let current = try heldJob(claim, now: now)
            let state: JobState = current.cancelled ? .cancelled
                : retryable && claim.attempt < current.maxAttempts ? .failed : .discarded
            let runAt = state == .failed ? now + (retryAfter ?? retryPolicy.delay(job: claim.jobID, attempt: claim.attempt)) : now
            let note = state == .failed ? "attempt \(claim.attempt) failed; retry at \(Timestamp.iso8601(runAt)): \(error)"
                : state == .discarded ? "attempt \(claim.attempt) failed; discarded: \(error)" : "run cancelled: \(error)"
            try connection.run("""
                UPDATE jobs SET state = $1, error = $2, run_at = $3, lease_owner = NULL, lease_expires_at = NULL,
                                finished_at = CASE WHEN $1 = 'failed' THEN NULL ELSE $4 END, updated_at = $4,
                                transition_note = $5
                WHERE id = $6
                """, state.rawValue, error, runAt, now, note, claim.jobID)
            if state == .discarded { try cancelDescendants(of: claim.jobID, now: now) }
            return state
        }
    }

    /// Gives the job back unfinished (a worker shutting down): ready again at once, the attempt given back.
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
        try connection.transaction {
            _ = try heldJob(claim, now: now)
            try connection.run("""
                UPDATE jobs SET state = 'cancelled', error = $1, lease_owner = NULL, lease_expires_at = NULL,
                                finished_at = $2, updated_at = $2, transition_note = $3
                WHERE id = $4
                """, reason, now, "cancelled: \(reason)", claim.jobID)
        }
    }

    /// Appends a progress event (`from == to == running`) with `message`.
    public func progress(_ claim: Claim, message: String) throws {
        let now = self.now
        let added = try connection.run("""
            INSERT INTO job_events (job_id, run_id, previous_id, attempt, from_state, to_state, at, message)
            SELECT id, run_id, last_event_id, attempt, 'running', 'running', $4, $5 FROM jobs
            WHERE \(Self.fence(from: 1))
            """, claim.jobID, claim.token, now, now, message)
        guard added == 1 else { throw JobQueueError.leaseLost(claim.jobID, token: claim.token) }
    }

    /// Replaces the job's checkpoint pointer, or throws `leaseLost` and changes nothing.
    public func recordCheckpointPointer(_ claim: Claim, _ pointer: JSONValue) throws {
        let now = self.now
        let changed = try connection.run("UPDATE jobs SET checkpoint_pointer = $4 WHERE \(Self.fence(from: 1))",
                                         claim.jobID, claim.token, now, JobJSON.canonicalString(pointer))
        guard changed == 1 else { throw JobQueueError.leaseLost(claim.jobID, token: claim.token) }
    }

    /// The job's checkpoint pointer; nil when no attempt recorded one.
    public func checkpointPointer(job: JobID) throws -> JSONValue? {
        guard let row = try connection.queryOne("SELECT checkpoint_pointer FROM jobs WHERE id = $1", job) else {
            throw JobQueueError.unknownJob(job)
        }
        return try row.string("checkpoint_pointer").map { try JobJSON.decode($0, context: "the checkpoint pointer of \(job)") }
    }

    // MARK: Internals

    private func putBack(_ claim: Claim, runAt: Int64?, note: String) throws {
        let now = self.now
        try connection.transaction {
            let current = try heldJob(claim, now: now)
            let state: JobState = current.cancelled ? .cancelled : .ready
            try connection.run("""
                UPDATE jobs SET state = $1, run_at = $2, max_attempts = max_attempts + 1, lease_owner = NULL,
                                lease_expires_at = NULL, finished_at = CASE WHEN $1 = 'cancelled' THEN $3 ELSE NULL END,
                                error = CASE WHEN $1 = 'cancelled' THEN 'run cancelled' ELSE error END,
                                updated_at = $3, transition_note = $4
                WHERE id = $5
                """, state.rawValue, runAt ?? now, now, current.cancelled ? "run cancelled; \(note)" : note, claim.jobID)
        }
    }

    /// The job as the claim's holder sees it, its row locked until the transaction ends (so no rescue moves it
    /// between this read and the caller's write), or `leaseLost` when the token no longer holds.
    private func heldJob(_ claim: Claim, now: Int64) throws -> (maxAttempts: Int, cancelled: Bool) {
        guard let row = try connection.queryOne("""
            SELECT j.max_attempts, r.cancelled_at FROM jobs j JOIN job_runs r ON r.id = j.run_id
            WHERE \(Self.fence("j", from: 1))
            FOR UPDATE OF j
            """, claim.jobID, claim.token, now) else {
            throw JobQueueError.leaseLost(claim.jobID, token: claim.token)
        }
        return (row.int("max_attempts") ?? 1, row.int64("cancelled_at") != nil)
    }
}
