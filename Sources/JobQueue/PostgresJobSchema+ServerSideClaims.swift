extension PostgresJobSchema {
    /// The claim, and a group commit with its next claims, as server-side functions: one statement each, where
    /// the group commit sent statement by statement took six round trips (begin, the completions, a savepoint,
    /// the claim, its release, commit) and now takes three (begin, the call, commit: see
    /// `PostgresJobQueue.complete(_:thenClaim:)` for why not one). PL/pgSQL also keeps each statement's plan, so
    /// the server plans the claim once per connection rather than once per call.
    ///
    /// The rules stay where they were: every change is an `UPDATE` of `jobs`, so the triggers of version 1 check
    /// each transition and append its event, and the fence (id, attempt, running, lease unexpired) is the
    /// completion's `WHERE`. `adapt_complete_and_claim` claims in an exception block, a subtransaction like the
    /// savepoint it replaces: a claim that fails leaves the completions recorded, and the worker claims again on
    /// its own. Its claims are collected before any is returned, so none whose update was undone is handed out.
    static let serverSideClaims = """
    CREATE TYPE adapt_claimed AS (
        id BIGINT, run_id BIGINT, name TEXT, kind TEXT, input TEXT, attempt BIGINT, max_attempts BIGINT,
        lease_length BIGINT, has_dependents BOOLEAN
    );

    -- Leases up to claim_limit due jobs of claim_kinds to claimer (lowest priority, then earliest run_at, then
    -- oldest); rows another claim holds are skipped. The lease is lease_override, else the job's own, else
    -- default_lease.
    CREATE FUNCTION adapt_claim(claimer TEXT, at_ms BIGINT, lease_override BIGINT, default_lease BIGINT,
                                claim_kinds TEXT[], claim_limit BIGINT)
    RETURNS SETOF adapt_claimed LANGUAGE plpgsql AS $$
    BEGIN
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
                  EXISTS (SELECT 1 FROM job_dependencies d WHERE d.depends_on = jobs.id);
    END $$;

    -- Records every completion of `completions` ([{id, attempt, output, note, claim_next, has_dependents}]) whose
    -- lease still holds, readies the dependents whose last parent it was, then claims one job for each recorded
    -- completion that asked. Rows: one per recorded completion (completed = its id, the rest null), then one per
    -- claim (completed null).
    CREATE FUNCTION adapt_complete_and_claim(completions JSONB, at_ms BIGINT, claimer TEXT, lease_override BIGINT,
                                             default_lease BIGINT, claim_kinds TEXT[])
    RETURNS TABLE (completed BIGINT, id BIGINT, run_id BIGINT, name TEXT, kind TEXT, input TEXT, attempt BIGINT,
                   max_attempts BIGINT, lease_length BIGINT, has_dependents BOOLEAN)
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
                 AS v(id BIGINT, attempt BIGINT, output TEXT, note TEXT, claim_next BOOLEAN, has_dependents BOOLEAN)
            WHERE jobs.id = v.id AND jobs.attempt = v.attempt AND jobs.state = 'running'
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
                            NULL::BIGINT, NULL::BIGINT, NULL::BOOLEAN
                     FROM unnest(recorded) AS r(job);
        RETURN QUERY SELECT NULL::BIGINT, c.* FROM unnest(claims) AS c;
    END $$;
    """
}
