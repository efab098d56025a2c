extension PostgresJobSchema {
    /// The advisory lock class of waiting listeners: a worker's listening session holds (this, its backend pid)
    /// for as long as it lives, so an enqueue can tell a live waiter from one whose process is gone.
    static let waiterLockClass: Int32 = 0x61_64_77_74  // "adwt"

    /// The channel a waiting worker's listener hears its handed jobs on: its own session's, by backend pid.
    static func handOffChannel(listenerPID: Int) -> String { handOffChannelPrefix + String(listenerPID) }
    static let handOffChannelPrefix = "adapt_handoff_"

    /// An enqueue hands its new jobs to workers already waiting for them, in its own transaction (Temporal's
    /// "sync match"). Before, a job enqueued to an idle fleet reached a worker through the enqueue's commit, a
    /// notification, and then the worker's own claim: a second round trip with its own statement and commit,
    /// about a third of the enqueue→start wait, and the part with the longest tail.
    ///
    /// - `job_waiters` holds each waiting worker's free slots, kinds and lease, kept by its listening session.
    ///   A row is a standing claim: `adapt_hand_off` leases a due job to the waiter as `adapt_claim` would
    ///   (attempt counted up, lease owner and expiry set, the same transition and event), takes one of its slots,
    ///   and notifies the claim on the waiter's own channel. The worker starts the job without asking again.
    /// - A waiter counts only while its listening session lives: that session holds an advisory lock, and a row
    ///   whose lock is free is deleted instead of used. A worker that pauses while it waits keeps its row, so a job
    ///   handed to it waits for its lease to run out, as a job it had claimed would.
    /// - A claim whose notification would not fit (NOTIFY payloads stop at 8,000 bytes) is left to the usual
    ///   claim, as is every job that becomes claimable other than by an enqueue.
    /// - `adapt_enqueue` and everything it runs (hand-off, triggers) plan each statement once per session: the
    ///   server otherwise plans a parameterised statement afresh for its first five runs before it settles on a
    ///   generic plan, which made a session's first five enqueues about 1 ms slower each (the lookups here are
    ///   by key and range, where the generic plan is the custom one).
    /// - `jobs_notify_claimable` now runs at commit and notifies only jobs that are still claimable then, so a
    ///   job handed over (or claimed in the transaction that readied it) wakes no other worker for nothing.
    static let handOffs = """
    CREATE TABLE job_waiters (
        owner TEXT PRIMARY KEY,
        listener_pid INTEGER NOT NULL,
        kinds TEXT[] NOT NULL CHECK (cardinality(kinds) > 0),
        free_slots INTEGER NOT NULL CHECK (free_slots >= 0),
        lease_override BIGINT CHECK (lease_override > 0),
        default_lease BIGINT NOT NULL CHECK (default_lease > 0),
        updated_at BIGINT NOT NULL
    );

    CREATE FUNCTION adapt_hand_off(first_id BIGINT, last_id BIGINT, at_ms BIGINT) RETURNS void
    LANGUAGE plpgsql AS $$
    DECLARE
        job RECORD;
        waiter job_waiters;
        lease BIGINT;
        payload TEXT;
    BEGIN
        IF NOT EXISTS (SELECT 1 FROM job_waiters WHERE free_slots > 0) THEN
            RETURN;
        END IF;
        FOR job IN SELECT j.id, j.run_id, j.name, j.kind, j.input, j.attempt, j.max_attempts, j.lease_ms
                   FROM jobs j
                   WHERE j.id BETWEEN first_id AND last_id AND j.state = 'ready' AND j.run_at <= at_ms
                   ORDER BY j.priority, j.run_at, j.id LOOP
            LOOP
                SELECT w.* INTO waiter FROM job_waiters w
                WHERE w.free_slots > 0 AND job.kind = ANY (w.kinds)
                ORDER BY w.updated_at LIMIT 1 FOR UPDATE SKIP LOCKED;
                EXIT WHEN NOT FOUND;
                -- A live listener holds this lock, so taking it means the waiter's session is gone.
                EXIT WHEN NOT pg_try_advisory_xact_lock(\(waiterLockClass), waiter.listener_pid);
                DELETE FROM job_waiters WHERE owner = waiter.owner;
            END LOOP;
            CONTINUE WHEN NOT FOUND;
            lease := coalesce(waiter.lease_override, job.lease_ms, waiter.default_lease);
            payload := json_build_object('owner', waiter.owner, 'id', job.id, 'run_id', job.run_id,
                                         'name', job.name, 'kind', job.kind, 'input', job.input,
                                         'attempt', job.attempt + 1, 'max_attempts', job.max_attempts,
                                         'lease_length', lease,
                                         'has_dependents', EXISTS (SELECT 1 FROM job_dependencies d
                                                                   WHERE d.depends_on = job.id))::text;
            CONTINUE WHEN octet_length(payload) >= 7900;
            UPDATE jobs SET state = 'running', attempt = jobs.attempt + 1, lease_owner = waiter.owner,
                            lease_expires_at = at_ms + lease, heartbeat_at = at_ms, updated_at = at_ms,
                            transition_note = 'claimed by ' || waiter.owner || ' at enqueue'
            WHERE jobs.id = job.id;
            UPDATE job_waiters SET free_slots = free_slots - 1 WHERE owner = waiter.owner;
            PERFORM pg_notify('\(handOffChannelPrefix)' || waiter.listener_pid, payload);
        END LOOP;
    END $$;

    CREATE OR REPLACE FUNCTION adapt_enqueue(run_kind TEXT, run_name TEXT, key TEXT, run_manifest TEXT, at_ms BIGINT,
                                             steps JSONB, dependencies JSONB)
    RETURNS TABLE (run_id BIGINT, first_job_id BIGINT, last_job_id BIGINT, existing BOOLEAN)
    LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
    #variable_conflict use_column
    DECLARE
        run BIGINT;
        first BIGINT;
        last BIGINT;
    BEGIN
        PERFORM pg_advisory_xact_lock(\(PostgresJobQueue.enqueueLock));
        IF key IS NOT NULL THEN
            SELECT r.id, r.first_job_id, r.last_job_id INTO run, first, last FROM job_runs r WHERE r.unique_key = key;
            IF FOUND THEN
                RETURN QUERY SELECT run, first, last, true;
                RETURN;
            END IF;
        END IF;
        INSERT INTO job_runs (kind, name, unique_key, manifest, created_at, first_job_id, last_job_id)
        SELECT run_kind, run_name, key, run_manifest, at_ms, next.id, next.id + jsonb_array_length(steps) - 1
        FROM (SELECT coalesce(max(j.id), 0) + 1 AS id FROM jobs j) AS next
        RETURNING job_runs.id, job_runs.first_job_id, job_runs.last_job_id INTO run, first, last;
        INSERT INTO jobs (id, run_id, name, kind, state, priority, run_at, max_attempts, lease_ms, input, waiting_on,
                          transition_note, created_at, updated_at)
        SELECT first + s.place, run, s.name, s.kind, s.state, s.priority, s.run_at, s.max_attempts, s.lease_ms,
               s.input, s.waiting_on, s.note, at_ms, at_ms
        FROM jsonb_to_recordset(steps) AS s(place BIGINT, name TEXT, kind TEXT, state TEXT, priority BIGINT,
                                            run_at BIGINT, max_attempts BIGINT, lease_ms BIGINT, input TEXT,
                                            waiting_on BIGINT, note TEXT)
        ORDER BY s.place;
        INSERT INTO job_dependencies (job_id, depends_on)
        SELECT first + d.job, first + d.parent FROM jsonb_to_recordset(dependencies) AS d(job BIGINT, parent BIGINT);
        PERFORM adapt_hand_off(first, last, at_ms);
        RETURN QUERY SELECT run, first, last, false;
    END $$;

    DROP TRIGGER jobs_notify_claimable ON jobs;
    CREATE OR REPLACE FUNCTION jobs_notify_claimable() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF EXISTS (SELECT 1 FROM jobs WHERE id = NEW.id AND state IN ('ready','failed')) THEN
            PERFORM pg_notify('\(channel)', NEW.kind);
        END IF;
        RETURN NULL;
    END $$;
    CREATE CONSTRAINT TRIGGER jobs_notify_claimable AFTER INSERT OR UPDATE OF state, run_at ON jobs
        DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW WHEN (NEW.state IN ('ready','failed')) EXECUTE FUNCTION jobs_notify_claimable();
    """
}
