extension PostgresJobSchema {
    /// A group commit finds its jobs by primary key. Its fence used to say `state = 'running'`, which let the
    /// planner read the jobs through `jobs_leases` instead: it counts `jsonb_to_recordset` as 100 rows and the
    /// running jobs as one or two, so it hashed every job whose lease had not yet run out. That index keeps an
    /// entry for every job claimed within the last lease until vacuum, and a bitmap scan never marks the dead
    /// ones, so each completion read more of them the longer a busy queue ran: about a fifth of the server's time
    /// over a drain of 10,000 jobs.
    ///
    /// Now each completion names its lease owner, and the fence is the owner, the attempt and an unexpired lease.
    /// That says as much as before (the jobs' check ties a lease owner and expiry to the running state) and one
    /// more thing (whose lease it is), but no longer matches `jobs_leases`' predicate, so the jobs are looked up
    /// by the ids the completions carry. `completions` is `[{id, attempt, owner, output, note, claim_next,
    /// has_dependents}]`.
    static let completionsByKey = """
    CREATE OR REPLACE FUNCTION adapt_complete_and_claim(completions JSONB, at_ms BIGINT, claimer TEXT,
                                                        lease_override BIGINT, default_lease BIGINT,
                                                        claim_kinds TEXT[])
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
                            NULL::BIGINT, NULL::BIGINT, NULL::BOOLEAN
                     FROM unnest(recorded) AS r(job);
        RETURN QUERY SELECT NULL::BIGINT, c.* FROM unnest(claims) AS c;
    END $$;
    """
}
