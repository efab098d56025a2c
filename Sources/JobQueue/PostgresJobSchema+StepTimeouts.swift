extension PostgresJobSchema {
    /// A timeout of each job's own (`timeout_ms`, `JobTimeout`), as `JobSchema.version5` adds on SQLite: stored by
    /// the enqueue and handed out with every claim, so a worker knows the deadline of the attempt it starts without
    /// another read. Jobs stored before have none.
    ///
    /// What hands out claims changes with it: the claim's row type `adapt_claimed` gains the column, `adapt_claim`
    /// returns it, `adapt_complete_and_claim` (whose result is a table of its own, so it is dropped and created
    /// again: a function's result type cannot be replaced) passes it on, `adapt_hand_off` puts it in the handed
    /// claim's notification, and `adapt_enqueue` stores it. Each is the function of its last migration with the one
    /// column added.
    static let stepTimeouts = """
    ALTER TABLE jobs ADD COLUMN timeout_ms BIGINT CHECK (timeout_ms IS NULL OR timeout_ms > 0);
    ALTER TYPE adapt_claimed ADD ATTRIBUTE timeout_ms BIGINT;

    CREATE OR REPLACE FUNCTION adapt_claim(claimer TEXT, at_ms BIGINT, lease_override BIGINT, default_lease BIGINT,
                                           claim_kinds TEXT[], claim_limit BIGINT)
    RETURNS SETOF adapt_claimed LANGUAGE plpgsql AS $$
    BEGIN
        IF cardinality(claim_kinds) = 1 THEN
            RETURN QUERY
            UPDATE jobs SET state = 'running', attempt = jobs.attempt + 1, lease_owner = claimer,
                            lease_expires_at = at_ms + coalesce(lease_override, jobs.lease_ms, default_lease),
                            heartbeat_at = at_ms, updated_at = at_ms, transition_note = 'claimed by ' || claimer
            FROM (SELECT j.id FROM jobs j
                  WHERE j.state IN ('ready','failed') AND j.kind = claim_kinds[1] AND j.run_at <= at_ms
                  ORDER BY j.priority, j.run_at, j.id LIMIT claim_limit
                  FOR UPDATE SKIP LOCKED) AS due
            WHERE jobs.id = due.id
            RETURNING jobs.id, jobs.run_id, jobs.name, jobs.kind, jobs.input, jobs.attempt, jobs.max_attempts,
                      jobs.lease_expires_at - at_ms,
                      EXISTS (SELECT 1 FROM job_dependencies d WHERE d.depends_on = jobs.id), jobs.timeout_ms;
            RETURN;
        END IF;
        RETURN QUERY
        UPDATE jobs SET state = 'running', attempt = jobs.attempt + 1, lease_owner = claimer,
                        lease_expires_at = at_ms + coalesce(lease_override, jobs.lease_ms, default_lease),
                        heartbeat_at = at_ms, updated_at = at_ms, transition_note = 'claimed by ' || claimer
        FROM (SELECT j.id FROM jobs j
              WHERE j.state IN ('ready','failed') AND j.kind = ANY (claim_kinds) AND j.run_at <= at_ms
              ORDER BY j.priority, j.run_at, j.id LIMIT claim_limit
              FOR UPDATE SKIP LOCKED) AS due
        WHERE jobs.id = due.id
        RETURNING jobs.id, jobs.run_id, jobs.name, jobs.kind, jobs.input, jobs.attempt, jobs.max_attempts,
                  jobs.lease_expires_at - at_ms,
                  EXISTS (SELECT 1 FROM job_dependencies d WHERE d.depends_on = jobs.id), jobs.timeout_ms;
    END $$;

    DROP FUNCTION adapt_complete_and_claim(JSONB, BIGINT, TEXT, BIGINT, BIGINT, TEXT[]);
    CREATE FUNCTION adapt_complete_and_claim(completions JSONB, at_ms BIGINT, claimer TEXT, lease_override BIGINT,
                                             default_lease BIGINT, claim_kinds TEXT[])
    RETURNS TABLE (completed BIGINT, id BIGINT, run_id BIGINT, name TEXT, kind TEXT, input TEXT, attempt BIGINT,
                   max_attempts BIGINT, lease_length BIGINT, has_dependents BOOLEAN, timeout_ms BIGINT)
    LANGUAGE plpgsql AS $$
    #variable_conflict use_column
    DECLARE
        recorded BIGINT[];
        parents BIGINT[];
        wanted BIGINT;
        parent BIGINT;
        claims adapt_claimed[] := '{}';
    BEGIN
        WITH done AS (
            UPDATE jobs SET state = 'succeeded', output = v.output, error = NULL, lease_owner = NULL,
                            lease_expires_at = NULL, finished_at = at_ms, updated_at = at_ms, transition_note = v.note
            FROM jsonb_to_recordset(completions)
                 AS v(id BIGINT, attempt BIGINT, owner TEXT, output TEXT, note TEXT, claim_next BOOLEAN,
                      has_dependents BOOLEAN)
            WHERE jobs.id = ANY (ARRAY(SELECT (c ->> 'id')::BIGINT FROM jsonb_array_elements(completions) c))
              AND jobs.id = v.id AND jobs.attempt = v.attempt AND jobs.lease_owner = v.owner
              AND jobs.lease_expires_at >= at_ms
            RETURNING jobs.id AS job, v.claim_next AS asks, v.has_dependents AS leads)
        SELECT coalesce(array_agg(done.job ORDER BY done.job), '{}'),
               coalesce(array_agg(done.job ORDER BY done.job) FILTER (WHERE done.leads), '{}'),
               count(*) FILTER (WHERE done.asks)
        INTO recorded, parents, wanted FROM done;

        -- One parent at a time, as a dependent counts its parents off one by one.
        FOREACH parent IN ARRAY parents LOOP
            UPDATE jobs SET waiting_on = jobs.waiting_on - 1,
                            state = CASE WHEN jobs.waiting_on = 1 THEN 'ready' ELSE jobs.state END,
                            run_at = CASE WHEN jobs.waiting_on = 1 THEN greatest(jobs.run_at, at_ms) ELSE jobs.run_at END,
                            updated_at = at_ms, transition_note = 'parents succeeded (last: job-' || parent || ')'
            WHERE jobs.state = 'pending'
              AND jobs.id IN (SELECT d.job_id FROM job_dependencies d WHERE d.depends_on = parent);
        END LOOP;

        IF wanted > 0 THEN
            BEGIN
                claims := ARRAY(SELECT c FROM adapt_claim(claimer, at_ms, lease_override, default_lease,
                                                          claim_kinds, wanted) AS c);
            EXCEPTION WHEN others THEN
                claims := '{}';
            END;
        END IF;

        RETURN QUERY SELECT r.job, NULL::BIGINT, NULL::BIGINT, NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::BIGINT,
                            NULL::BIGINT, NULL::BIGINT, NULL::BOOLEAN, NULL::BIGINT
                     FROM unnest(recorded) AS r(job);
        RETURN QUERY SELECT NULL::BIGINT, c.* FROM unnest(claims) AS c;
    END $$;

    CREATE OR REPLACE FUNCTION adapt_hand_off(first_id BIGINT, last_id BIGINT, at_ms BIGINT) RETURNS void
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
        FOR job IN SELECT j.id, j.run_id, j.name, j.kind, j.input, j.attempt, j.max_attempts, j.lease_ms, j.timeout_ms
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
                                         'lease_length', lease, 'timeout_ms', job.timeout_ms,
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
        INSERT INTO jobs (id, run_id, name, kind, state, priority, run_at, max_attempts, lease_ms, timeout_ms, input,
                          waiting_on, transition_note, created_at, updated_at)
        SELECT first + s.place, run, s.name, s.kind, s.state, s.priority, s.run_at, s.max_attempts, s.lease_ms,
               s.timeout_ms, s.input, s.waiting_on, s.note, at_ms, at_ms
        FROM jsonb_to_recordset(steps) AS s(place BIGINT, name TEXT, kind TEXT, state TEXT, priority BIGINT,
                                            run_at BIGINT, max_attempts BIGINT, lease_ms BIGINT, timeout_ms BIGINT,
                                            input TEXT, waiting_on BIGINT, note TEXT)
        ORDER BY s.place;
        INSERT INTO job_dependencies (job_id, depends_on)
        SELECT first + d.job, first + d.parent FROM jsonb_to_recordset(dependencies) AS d(job BIGINT, parent BIGINT);
        PERFORM adapt_hand_off(first, last, at_ms);
        RETURN QUERY SELECT run, first, last, false;
    END $$;
    """
}
