extension PostgresJobSchema {
    /// The enqueue as one server-side function, so storing a run is one round trip where it was four (begin with
    /// the lock, the run, each job, commit): every enqueue→start wait holds the enqueue, and under load each round
    /// trip waits for the server's process to be scheduled again.
    ///
    /// The rules stay in the triggers and constraints: the jobs are inserted in the description's order after the
    /// run, in one statement whose rows each pass `jobs_within_run` and get their created event. Ids are the next
    /// after the highest job id, read under the enqueue lock (`PostgresJobQueue.enqueueLock`), so a run's ids stay
    /// consecutive. `steps` is `[{place, name, kind, state, priority, run_at, max_attempts, lease_ms, input,
    /// waiting_on, note}]` in order, `dependencies` `[{job, parent}]` as offsets. A run with `key` already stored
    /// is returned with `existing` true and nothing is written.
    static let serverSideEnqueue = """
    CREATE FUNCTION adapt_enqueue(run_kind TEXT, run_name TEXT, key TEXT, run_manifest TEXT, at_ms BIGINT,
                                  steps JSONB, dependencies JSONB)
    RETURNS TABLE (run_id BIGINT, first_job_id BIGINT, last_job_id BIGINT, existing BOOLEAN)
    LANGUAGE plpgsql AS $$
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
        RETURN QUERY SELECT run, first, last, false;
    END $$;
    """
}
