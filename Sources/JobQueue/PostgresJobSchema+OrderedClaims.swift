extension PostgresJobSchema {
    /// A worker of one kind claims through the claimable index in its order. With `kind = ANY (kinds)` the server
    /// cannot read `jobs_claimable (kind, priority, run_at, id)` in claim order, so it read every due job of the
    /// kinds and sorted them for each claim (2,000 queued jobs: about 0.75 ms a claim, growing with the queue);
    /// with one kind it reads the first `claim_limit` entries and stops. Several kinds keep the sorted read.
    static let orderedSingleKindClaims = """
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
                      EXISTS (SELECT 1 FROM job_dependencies d WHERE d.depends_on = jobs.id);
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
                  EXISTS (SELECT 1 FROM job_dependencies d WHERE d.depends_on = jobs.id);
    END $$;
    """
}
