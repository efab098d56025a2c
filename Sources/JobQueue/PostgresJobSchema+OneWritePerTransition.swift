extension PostgresJobSchema {
    /// A state change writes its job's row once. Until this version its event was appended after the update, and
    /// the event's chain trigger then updated the same row again to point it at the event (a second row version,
    /// its index entries, and a second look at the job); and each event, inserted by a trigger as a statement of
    /// its own, ran the followers' check (`eventNotifications`) once more. Together that was about a third of the
    /// server's time in a claim-and-complete.
    ///
    /// Now the transition's event is appended before the update, which points the row at it in the same write. The
    /// chain trigger lets those events through: `OLD.last_event_id` is their `previous_id` by construction, and a
    /// trigger depth above one with a `from_state` says the event comes from `jobs_transition_event` (a job's first
    /// event, from `jobs_created_event`, has none, and every event a statement inserts itself, like a progress
    /// note, has depth one and is checked as before). The followers are told once per statement on `jobs`, and
    /// once per statement that inserts events itself.
    static let oneWritePerTransition = """
    CREATE OR REPLACE FUNCTION jobs_transition_event() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        event BIGINT;
    BEGIN
        INSERT INTO job_events (job_id, run_id, previous_id, attempt, from_state, to_state, at, message)
        VALUES (NEW.id, NEW.run_id, OLD.last_event_id, NEW.attempt, OLD.state, NEW.state, NEW.updated_at,
                NEW.transition_note)
        RETURNING id INTO event;
        NEW.last_event_id := event;
        RETURN NEW;
    END $$;
    -- BEFORE triggers run in name order, so jobs_transition_allowed still refuses a move before its event is written.
    DROP TRIGGER jobs_transition_event ON jobs;
    CREATE TRIGGER jobs_transition_event BEFORE UPDATE OF state ON jobs
        FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION jobs_transition_event();

    CREATE OR REPLACE FUNCTION job_events_chain() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF pg_trigger_depth() > 1 AND NEW.from_state IS NOT NULL THEN
            RETURN NULL;
        END IF;
        UPDATE jobs SET last_event_id = NEW.id
        WHERE id = NEW.job_id AND last_event_id IS NOT DISTINCT FROM NEW.previous_id;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'an event names an existing job and, as previous_id, that job''s last event'
                USING ERRCODE = 'check_violation';
        END IF;
        RETURN NULL;
    END $$;

    DROP TRIGGER job_events_notify_followers ON job_events;
    CREATE TRIGGER job_events_notify_followers AFTER INSERT ON job_events
        FOR EACH STATEMENT WHEN (pg_trigger_depth() < 1) EXECUTE FUNCTION job_events_notify_followers();
    CREATE TRIGGER jobs_notify_event_followers AFTER INSERT OR UPDATE OF state ON jobs
        FOR EACH STATEMENT EXECUTE FUNCTION job_events_notify_followers();
    """
}
