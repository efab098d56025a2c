extension PostgresJobSchema {
    /// A statement's events are appended by one insert per statement instead of one per row. Until this version
    /// each created or changed job ran an `INSERT` of its own from a row trigger: a fresh executor each time,
    /// which parses `job_events`' checks again and queues the chain trigger's look at the job. That was about a
    /// third of the server's time in a claim-and-complete, and a created event also updated its new job row a
    /// second time to point it at the event.
    ///
    /// Now a row trigger only checks the move and gives the row its next event id (`last_event_id`, from the
    /// events' own sequence), so the row is written once; at the statement's end `jobs_created_events` and
    /// `jobs_transition_events` insert every event of the statement at once from its transition tables, with
    /// those ids. The chain holds by construction: a created event has no `previous_id` and is its job's
    /// `last_event_id`; a transition's `previous_id` is the old row's `last_event_id` and its id the new row's.
    /// So `job_events_chain` looks only at events a statement inserts itself (a progress note): those are the
    /// ones at trigger depth 0. PostgreSQL allows no column list on a trigger with transition tables, so
    /// `jobs_transition_events` runs after every update of `jobs` and keeps the rows whose state moved.
    static let eventsPerStatement = """
    CREATE OR REPLACE FUNCTION jobs_insert_allowed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NEW.state NOT IN ('pending','ready') THEN
            RAISE EXCEPTION 'a job is created pending or ready' USING ERRCODE = 'check_violation';
        END IF;
        IF NOT EXISTS (SELECT 1 FROM job_runs WHERE id = NEW.run_id AND NEW.id BETWEEN first_job_id AND last_job_id) THEN
            RAISE EXCEPTION 'a job is created with an id inside its run''s range of job ids'
                USING ERRCODE = 'check_violation';
        END IF;
        NEW.last_event_id := nextval('job_events_id_seq');
        RETURN NEW;
    END $$;

    DROP TRIGGER jobs_created_event ON jobs;
    DROP FUNCTION jobs_created_event();
    CREATE FUNCTION jobs_created_events() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO job_events (id, job_id, run_id, previous_id, attempt, from_state, to_state, at, message)
        OVERRIDING SYSTEM VALUE
        SELECT n.last_event_id, n.id, n.run_id, NULL, n.attempt, NULL, n.state, n.created_at, n.transition_note
        FROM created n ORDER BY n.last_event_id;
        RETURN NULL;
    END $$;
    CREATE TRIGGER jobs_created_events AFTER INSERT ON jobs REFERENCING NEW TABLE AS created
        FOR EACH STATEMENT EXECUTE FUNCTION jobs_created_events();

    CREATE OR REPLACE FUNCTION jobs_transition_allowed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        -- In parentheses: PL/pgSQL would end the IF's condition at the CASE's first THEN.
        IF NOT (CASE OLD.state
            WHEN 'pending' THEN NEW.state IN ('ready','cancelled')
            WHEN 'ready' THEN NEW.state IN ('running','cancelled')
            WHEN 'running' THEN NEW.state IN ('succeeded','failed','discarded','cancelled','ready')
            WHEN 'failed' THEN NEW.state IN ('running','cancelled','ready')
            WHEN 'discarded' THEN NEW.state IN ('ready','pending')
            WHEN 'cancelled' THEN NEW.state IN ('ready','pending')
            ELSE false END) THEN
            RAISE EXCEPTION 'job state transition not allowed' USING ERRCODE = 'check_violation';
        END IF;
        NEW.last_event_id := nextval('job_events_id_seq');
        RETURN NEW;
    END $$;

    DROP TRIGGER jobs_transition_event ON jobs;
    DROP FUNCTION jobs_transition_event();
    CREATE FUNCTION jobs_transition_events() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO job_events (id, job_id, run_id, previous_id, attempt, from_state, to_state, at, message)
        OVERRIDING SYSTEM VALUE
        SELECT n.last_event_id, n.id, n.run_id, o.last_event_id, n.attempt, o.state, n.state, n.updated_at,
               n.transition_note
        FROM moved_to n JOIN moved_from o ON o.id = n.id
        WHERE o.state IS DISTINCT FROM n.state
        ORDER BY n.last_event_id;
        RETURN NULL;
    END $$;
    CREATE TRIGGER jobs_transition_events AFTER UPDATE ON jobs
        REFERENCING OLD TABLE AS moved_from NEW TABLE AS moved_to
        FOR EACH STATEMENT EXECUTE FUNCTION jobs_transition_events();

    CREATE OR REPLACE FUNCTION job_events_chain() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE jobs SET last_event_id = NEW.id
        WHERE id = NEW.job_id AND last_event_id IS NOT DISTINCT FROM NEW.previous_id;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'an event names an existing job and, as previous_id, that job''s last event'
                USING ERRCODE = 'check_violation';
        END IF;
        RETURN NULL;
    END $$;
    DROP TRIGGER job_events_chain ON job_events;
    CREATE TRIGGER job_events_chain AFTER INSERT ON job_events
        FOR EACH ROW WHEN (pg_trigger_depth() < 1) EXECUTE FUNCTION job_events_chain();
    """
}
