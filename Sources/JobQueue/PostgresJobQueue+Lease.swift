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
        try claim(request, limit: 1).first
    }

    /// Takes up to `limit` due jobs at once, as `claim(_:)` takes one: one statement, one commit.
    public func claim(_ request: ClaimRequest, limit: Int) throws -> [Claim] {
        try claimStatement(request, now: now, limit: limit)
    }

    func claimStatement(_ request: ClaimRequest, now: Int64, limit: Int) throws -> [Claim] {
        guard limit > 0 else { return [] }
        let override: Int64? = request.overridesJobLeases ? request.leaseMilliseconds : nil
        let rows = try connection.query("SELECT * FROM adapt_claim($1, $2, $3, $4, \(Self.textArray(5)), $6)",
                                        request.owner, now, override, request.leaseMilliseconds,
                                        Self.jsonArray(request.kinds), limit)
        return try rows.map { try Claim(row: $0, owner: request.owner, now: now) }.sorted { $0.jobID.value < $1.jobID.value }
    }

    /// A `text[]` from parameter `$index`, bound as a JSON array of strings (no quoting rules of array literals).
    static func textArray(_ index: Int) -> String {
        "ARRAY(SELECT jsonb_array_elements_text($\(index)::jsonb))"
    }

    static func jsonArray(_ strings: [String]) -> String {
        JobJSON.canonicalString(.array(strings.map { .string($0) }))
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

    /// Group commit, as `JobQueue.complete(_:thenClaim:)`: every completion of `batch`, then one claim taking a
    /// job for each completion that asked (a failed claim does not undo the completions). Without hooks this is
    /// one call of `adapt_complete_and_claim` between `BEGIN` and `COMMIT`: three round trips and one commit for
    /// the whole batch. The call is not sent alone, although it would be its own transaction: a link cut while it
    /// is on its way leaves it in the socket, and the kernel delivers it once the link is back, after the worker
    /// gave up on the connection. Alone it would then commit, and the worker, retrying on a new connection, would
    /// be told its lease was lost for a result that was recorded; inside a transaction it dies with its session.
    /// A completion with a hook runs in a savepoint of its own, so a refusing hook fails alone; the claim then
    /// follows the hooks in the same transaction. A lost lease writes nothing and fails alone.
    public func complete(_ batch: [JobCompletion<PostgresConnection>], thenClaim next: ClaimRequest) throws -> [Result<Claim?, any Error>] {
        let now = self.now
        guard batch.contains(where: { $0.alsoInTransaction != nil }) else {
            let (recorded, claims) = try connection.transaction {
                try completeTogether(batch, claimNext: true, next: next, now: now)
            }
            return Self.results(of: batch, recorded: recorded, claims: claims)
        }
        return try connection.transaction {
            var results = Array(repeating: Result<Claim?, any Error>.success(nil), count: batch.count)
            let plain = batch.indices.filter { batch[$0].alsoInTransaction == nil }
            let (recorded, _) = try completeTogether(plain.map { batch[$0] }, claimNext: false, next: next, now: now)
            for (index, result) in zip(plain, Self.results(of: plain.map { batch[$0] }, recorded: recorded, claims: [])) {
                results[index] = result
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

    /// Records the success of every completion whose lease still holds (each row fenced as `fence` says) and
    /// readies the dependents, in one statement; with `claimNext`, the same statement claims a job for each
    /// recorded completion that asks. Returns the ids it recorded and the claims.
    private func completeTogether(_ batch: [JobCompletion<PostgresConnection>], claimNext: Bool, next: ClaimRequest,
                                  now: Int64) throws -> (recorded: Set<Int64>, claims: [Claim]) {
        guard !batch.isEmpty else { return ([], []) }
        let rows = batch.map { finished in
            JSONValue.object(["id": .int(Int(finished.claim.jobID.value)), "attempt": .int(Int(finished.claim.token)),
                              "owner": .string(finished.claim.owner),
                              "output": .string(JobJSON.canonicalString(finished.output)),
                              "note": .string("completed by \(finished.claim.owner)"),
                              "claim_next": .bool(claimNext && finished.claimNext),
                              "has_dependents": .bool(finished.claim.hasDependents)])
        }
        let override: Int64? = next.overridesJobLeases ? next.leaseMilliseconds : nil
        let answer = try connection.query("""
            SELECT * FROM adapt_complete_and_claim($1::jsonb, $2, $3, $4, $5, \(Self.textArray(6)))
            """, JobJSON.canonicalString(.array(rows)), now, next.owner, override, next.leaseMilliseconds,
            Self.jsonArray(next.kinds))
        var recorded = Set<Int64>()
        var claims: [Claim] = []
        for row in answer {
            if let id = row.int64("completed") {
                recorded.insert(id)
            } else {
                claims.append(try Claim(row: row, owner: next.owner, now: now))
            }
        }
        return (recorded, claims.sorted { $0.jobID.value < $1.jobID.value })
    }

    /// Per completion: `leaseLost` when it was not recorded, else its next claim (handed out in batch order to the
    /// completions that asked) or nil.
    private static func results(of batch: [JobCompletion<PostgresConnection>], recorded: Set<Int64>,
                                claims: [Claim]) -> [Result<Claim?, any Error>] {
        var unhanded = claims[...]
        return batch.map { finished in
            let claim = finished.claim
            guard recorded.contains(claim.jobID.value) else {
                return .failure(JobQueueError.leaseLost(claim.jobID, token: claim.token))
            }
            return .success(finished.claimNext ? unhanded.popFirst() : nil)
        }
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
