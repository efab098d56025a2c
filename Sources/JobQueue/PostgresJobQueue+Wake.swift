import AdaptCore
import Storage

/// How an idle worker on PostgreSQL learns of new work: `jobs_notify_claimable` notifies `adapt_jobs` with the
/// job's kind whenever a job becomes ready or failed (an enqueue, a dependency finishing, a retry, a rescue),
/// delivered when that transaction commits. The worker listens on a connection of its own, since waiting
/// holds it, and polls for nothing in between.
///
/// While its slots wait, the worker also offers them (`offerWaitingSlots`): an enqueue then leases its new jobs
/// to the worker in its own transaction and notifies each claim on the listening session's own channel
/// (`PostgresJobSchema.handOffs`), so the job starts without a claim of its own.
extension PostgresJobQueue {
    /// What ended a wait.
    public struct Wake: Sendable {
        /// A job of one of the kinds waited for may have become claimable.
        public var notified = false
        /// Jobs an enqueue leased to this worker while it waited: already claimed, to be started (or released).
        public var handed: [Claim] = []

        public init() {}
    }

    /// Waits until a job of one of `kinds` may have become claimable, a job is handed over, or
    /// `timeoutMilliseconds` pass (the caller passes the time until `nextWakeTime`, which no notification
    /// announces), or `wakeUp` is raised. Call `hasClaimableWork` (or claim) before the first wait: notifications
    /// sent before this queue first listened are not delivered.
    public func waitForWork(kinds: [String], timeoutMilliseconds: Int, wakeUp: WakeUpEvent? = nil) throws -> Wake {
        let session = try listening()
        let deadline = clock.nowMilliseconds() + Int64(timeoutMilliseconds)
        while true {
            let left = Int(deadline - clock.nowMilliseconds())
            guard left > 0 else { return Wake() }
            let received = try session.connection.waitForNotifications(timeoutMilliseconds: left, wakeUp: wakeUp)
            var wake = Wake()
            for notification in received {
                if notification.channel == session.handOffChannel {
                    wake.handed.append(try handedClaim(notification.payload))
                } else if kinds.contains(notification.payload) {
                    wake.notified = true
                }
            }
            if wake.notified || !wake.handed.isEmpty || received.isEmpty { return wake }
        }
    }

    /// Offers `slots` free slots of the worker claiming with `request` to enqueues (zero withdraws the offer),
    /// and returns the free slots the offer had just before (nil when there was none): fewer than were offered
    /// means enqueues took some, whose claims are on their way. Written from the listening session and
    /// committed asynchronously: an offer lost in a crash of the server went with the session that made it.
    @discardableResult
    public func offerWaitingSlots(_ slots: Int, for request: ClaimRequest) throws -> Int? {
        let session = try listening()
        if slots == 0 {
            return try session.connection.queryOne("DELETE FROM job_waiters WHERE owner = $1 RETURNING free_slots",
                                                   request.owner)?.int("free_slots")
        }
        // The old row is locked and read before it is written, by a subquery the update joins: a CTE read only in
        // RETURNING would run after the write and, refused the row its own statement had just changed, say nil.
        let lease: Int64? = request.overridesJobLeases ? request.leaseMilliseconds : nil
        if let previous = try session.connection.queryOne("""
            UPDATE job_waiters w SET listener_pid = pg_backend_pid(), kinds = \(Self.textArray(2)), free_slots = $3,
                lease_override = $4, default_lease = $5, updated_at = $6
            FROM (SELECT owner, free_slots FROM job_waiters WHERE owner = $1 FOR UPDATE) AS previous
            WHERE w.owner = previous.owner
            RETURNING previous.free_slots
            """, request.owner, Self.jsonArray(request.kinds), slots, lease, request.leaseMilliseconds, now) {
            return previous.int("free_slots")
        }
        // Only this worker writes its row while it lives (an enqueue deletes it only when its session is gone).
        try session.connection.run("""
            INSERT INTO job_waiters (owner, listener_pid, kinds, free_slots, lease_override, default_lease, updated_at)
            VALUES ($1, pg_backend_pid(), \(Self.textArray(2)), $3, $4, $5, $6)
            """, request.owner, Self.jsonArray(request.kinds), slots, lease, request.leaseMilliseconds, now)
        return nil
    }

    /// Opens the listening connection on first use (or again after it broke).
    public func startListening() throws {
        _ = try listening()
    }

    /// The connection a worker waits on (holding the lock that says it lives) and the channel of its handed jobs.
    struct ListeningSession: Sendable {
        let connection: PostgresConnection
        let handOffChannel: String
    }

    private func listening() throws -> ListeningSession {
        try listener.withLock { current in
            if let current, current.connection.isConnected { return current }
            let opened = try PostgresConnection(connectionString)
            try opened.execute("SET synchronous_commit = off")
            let pid = try opened.scalar("SELECT pg_backend_pid()").integerValue ?? 0
            try opened.run("SELECT pg_advisory_lock($1::int, $2::int)", Int64(PostgresJobSchema.waiterLockClass), pid)
            try opened.listen(PostgresJobSchema.channel)
            let session = ListeningSession(connection: opened, handOffChannel: PostgresJobSchema.handOffChannel(listenerPID: Int(pid)))
            try opened.listen(session.handOffChannel)
            current = session
            return session
        }
    }

    /// The claim `adapt_hand_off` notified: the row `adapt_claim` would have returned, as JSON.
    private func handedClaim(_ payload: String) throws -> Claim {
        let fields = try JobJSON.decode(payload, context: "a handed job")
        let id = fields["id"]?.intValue.map(Int64.init) ?? 0
        let input = try fields["input"]?.stringValue.map { text in
            do { return try JobJSON.decode(text, context: "input") } catch {
                throw JobQueueError.corruptRow(table: "jobs", id: id, column: "input")
            }
        }
        let lease = Int64(fields["lease_length"]?.intValue ?? 0)
        return Claim(jobID: JobID(id), runID: RunID(Int64(fields["run_id"]?.intValue ?? 0)),
                     name: fields["name"]?.stringValue ?? "", kind: fields["kind"]?.stringValue ?? "",
                     input: input ?? .null, token: Int64(fields["attempt"]?.intValue ?? 0),
                     maxAttempts: fields["max_attempts"]?.intValue ?? 1, owner: fields["owner"]?.stringValue ?? "",
                     leaseExpiresAt: now + lease, leaseMilliseconds: lease,
                     timeoutMilliseconds: fields["timeout_ms"]?.intValue.map(Int64.init),
                     hasDependents: fields["has_dependents"]?.boolValue ?? true)
    }
}

extension PostgresJobQueue: JobEngine {
    public typealias Connection = PostgresConnection
}
