extension JobSchema {
    /// Two B-trees fewer written per enqueue and one fewer per state change, with the same rules; and a lease
    /// per job.
    ///
    /// A commit writes every page it touches to the WAL, so the number of B-trees an operation touches is most
    /// of its cost once a commit needs no fsync. Two indexes existed only to find rows that can be found
    /// without them:
    /// - `job_events (job_id, id)`: an event now names the previous event of its job (`previous_id`) and a job
    ///   its last event (`last_event_id`), so a job's history is a walk back from the job row, which every
    ///   state change writes anyway. `job_events_chain` moves the job's pointer and refuses an event that does
    ///   not continue its job's chain (or names no job), in place of the foreign key.
    /// - `UNIQUE (run_id, name)` on jobs: a run's jobs are inserted in one transaction, so they were always
    ///   consecutive ids; the run now records that range (`first_job_id`, `last_job_id`) and
    ///   `jobs_within_run` refuses a job outside its run's range, in place of the foreign key. Names are unique
    ///   within a run because `RunDescription.validate` refuses duplicates before anything is stored.
    /// It also gives each job an optional lease of its own (`lease_ms`: a pipeline step's `lease_seconds`).
    /// Without those foreign keys nothing cascades: `pruneHistory` deletes a run's events, jobs and run itself.
    /// A run whose jobs are not consecutive cannot be converted and fails the migration (`first_job_id` is
    /// NOT NULL), leaving the database as it was.
    static let version3 = """
    DROP TRIGGER jobs_created_event;
    DROP TRIGGER jobs_transition_event;

    CREATE TABLE job_events_v3 (
        id INTEGER PRIMARY KEY,
        job_id INTEGER NOT NULL,
        run_id INTEGER NOT NULL,
        previous_id INTEGER CHECK (previous_id < id),
        attempt INTEGER NOT NULL,
        from_state TEXT CHECK (from_state IS NULL OR from_state = 'pending' OR from_state = 'ready'
                               OR from_state = 'running' OR from_state = 'succeeded' OR from_state = 'failed'
                               OR from_state = 'discarded' OR from_state = 'cancelled'),
        to_state TEXT NOT NULL CHECK (to_state = 'pending' OR to_state = 'ready' OR to_state = 'running'
                                      OR to_state = 'succeeded' OR to_state = 'failed' OR to_state = 'discarded'
                                      OR to_state = 'cancelled'),
        at INTEGER NOT NULL,
        message TEXT
    ) STRICT;
    INSERT INTO job_events_v3 (id, job_id, run_id, previous_id, attempt, from_state, to_state, at, message)
        SELECT id, job_id, run_id, lag(id) OVER (PARTITION BY job_id ORDER BY id), attempt, from_state, to_state, at,
               message
        FROM job_events;
    DROP TABLE job_events;
    ALTER TABLE job_events_v3 RENAME TO job_events;

    CREATE TABLE job_runs_v3 (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL CHECK (length(kind) > 0),
        name TEXT NOT NULL,
        unique_key TEXT,
        manifest TEXT NOT NULL CHECK (json_valid(manifest)),
        created_at INTEGER NOT NULL,
        cancelled_at INTEGER,
        first_job_id INTEGER NOT NULL,
        last_job_id INTEGER NOT NULL CHECK (last_job_id >= first_job_id)
    ) STRICT;
    INSERT INTO job_runs_v3 (id, kind, name, unique_key, manifest, created_at, cancelled_at, first_job_id, last_job_id)
        SELECT r.id, r.kind, r.name, r.unique_key, r.manifest, r.created_at, r.cancelled_at,
               CASE WHEN j.n = j.last - j.first + 1 THEN j.first END, j.last
        FROM job_runs r
        LEFT JOIN (SELECT run_id, min(id) AS first, max(id) AS last, count(*) AS n FROM jobs GROUP BY run_id) j
               ON j.run_id = r.id;
    DROP TABLE job_runs;
    ALTER TABLE job_runs_v3 RENAME TO job_runs;
    CREATE UNIQUE INDEX job_runs_unique_key ON job_runs (unique_key) WHERE unique_key IS NOT NULL;

    CREATE TABLE jobs_v3 (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL,
        name TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (length(kind) > 0),
        state TEXT NOT NULL CHECK (state = 'pending' OR state = 'ready' OR state = 'running' OR state = 'succeeded'
                                   OR state = 'failed' OR state = 'discarded' OR state = 'cancelled'),
        priority INTEGER NOT NULL DEFAULT 0,
        run_at INTEGER NOT NULL,
        attempt INTEGER NOT NULL DEFAULT 0 CHECK (attempt >= 0),
        max_attempts INTEGER NOT NULL CHECK (max_attempts >= 1),
        input TEXT NOT NULL CHECK (json_valid(input)),
        output TEXT CHECK (output IS NULL OR json_valid(output)),
        error TEXT,
        lease_owner TEXT,
        lease_expires_at INTEGER,
        heartbeat_at INTEGER,
        waiting_on INTEGER NOT NULL DEFAULT 0 CHECK (waiting_on >= 0),
        transition_note TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        finished_at INTEGER,
        last_event_id INTEGER,
        -- the lease of every claim of this job (its step's own); NULL: the claiming worker's
        lease_ms INTEGER CHECK (lease_ms IS NULL OR lease_ms > 0),
        -- a lease exists exactly while the job runs
        CHECK ((state = 'running') = (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL)),
        -- a running job has been claimed at least once: its attempt is its fencing token
        CHECK (state <> 'running' OR attempt >= 1),
        CHECK (state <> 'succeeded' OR output IS NOT NULL),
        CHECK ((state = 'succeeded' OR state = 'discarded' OR state = 'cancelled') = (finished_at IS NOT NULL))
    ) STRICT;
    INSERT INTO jobs_v3 (id, run_id, name, kind, state, priority, run_at, attempt, max_attempts, input, output, error,
                         lease_owner, lease_expires_at, heartbeat_at, waiting_on, transition_note, created_at,
                         updated_at, finished_at, last_event_id)
        SELECT j.id, j.run_id, j.name, j.kind, j.state, j.priority, j.run_at, j.attempt, j.max_attempts, j.input,
               j.output, j.error, j.lease_owner, j.lease_expires_at, j.heartbeat_at, j.waiting_on, j.transition_note,
               j.created_at, j.updated_at, j.finished_at, e.last
        FROM jobs j LEFT JOIN (SELECT job_id, max(id) AS last FROM job_events GROUP BY job_id) e ON e.job_id = j.id;
    DROP TABLE jobs;
    ALTER TABLE jobs_v3 RENAME TO jobs;
    CREATE INDEX jobs_claimable ON jobs (kind, priority, run_at, id) WHERE state IN ('ready','failed');
    CREATE INDEX jobs_leases ON jobs (lease_expires_at) WHERE state = 'running';

    CREATE TRIGGER jobs_initial_state BEFORE INSERT ON jobs
    WHEN NEW.state <> 'pending' AND NEW.state <> 'ready'
    BEGIN SELECT RAISE(ABORT, 'a job is created pending or ready'); END;

    CREATE TRIGGER jobs_within_run BEFORE INSERT ON jobs
    WHEN NOT EXISTS (SELECT 1 FROM job_runs WHERE id = NEW.run_id AND NEW.id BETWEEN first_job_id AND last_job_id)
    BEGIN SELECT RAISE(ABORT, 'a job is created with an id inside its run''s range of job ids'); END;

    CREATE TRIGGER jobs_stay_in_their_run BEFORE UPDATE OF id, run_id ON jobs
    BEGIN SELECT RAISE(ABORT, 'a job never changes its id or its run'); END;

    CREATE TRIGGER jobs_transition_allowed BEFORE UPDATE OF state ON jobs
    WHEN OLD.state IS NOT NEW.state AND NOT CASE OLD.state
        WHEN 'pending' THEN NEW.state = 'ready' OR NEW.state = 'cancelled'
        WHEN 'ready' THEN NEW.state = 'running' OR NEW.state = 'cancelled'
        WHEN 'running' THEN NEW.state = 'succeeded' OR NEW.state = 'failed' OR NEW.state = 'discarded'
                            OR NEW.state = 'cancelled' OR NEW.state = 'ready'
        WHEN 'failed' THEN NEW.state = 'running' OR NEW.state = 'cancelled' OR NEW.state = 'ready'
        WHEN 'discarded' THEN NEW.state = 'ready' OR NEW.state = 'pending'
        WHEN 'cancelled' THEN NEW.state = 'ready' OR NEW.state = 'pending'
        ELSE 0 END
    BEGIN SELECT RAISE(ABORT, 'job state transition not allowed'); END;

    CREATE TRIGGER jobs_created_event AFTER INSERT ON jobs
    BEGIN
        INSERT INTO job_events (job_id, run_id, previous_id, attempt, from_state, to_state, at, message)
        VALUES (NEW.id, NEW.run_id, NULL, NEW.attempt, NULL, NEW.state, NEW.created_at, NEW.transition_note);
    END;

    CREATE TRIGGER jobs_transition_event AFTER UPDATE OF state ON jobs
    WHEN OLD.state IS NOT NEW.state
    BEGIN
        INSERT INTO job_events (job_id, run_id, previous_id, attempt, from_state, to_state, at, message)
        VALUES (NEW.id, NEW.run_id, OLD.last_event_id, NEW.attempt, OLD.state, NEW.state, NEW.updated_at,
                NEW.transition_note);
    END;

    -- One look at the job both checks the new event continues its chain and moves the job's pointer.
    CREATE TRIGGER job_events_chain AFTER INSERT ON job_events
    BEGIN
        UPDATE jobs SET last_event_id = NEW.id WHERE id = NEW.job_id AND last_event_id IS NEW.previous_id;
        SELECT RAISE(ABORT, 'an event names an existing job and, as previous_id, that job''s last event')
        WHERE changes() = 0;
    END;

    CREATE TRIGGER job_events_append_only BEFORE UPDATE ON job_events
    BEGIN SELECT RAISE(ABORT, 'job events are never rewritten'); END;
    """
}
