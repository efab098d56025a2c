import Storage

/// The job engine's tables, as ordered migrations (never edit a shipped one; append a new one).
///
/// Three tables: `job_runs` (one row per enqueued run description), `jobs` (one row per step, with its
/// lease and fencing token) and `job_events` (the append-only history). Times are integer milliseconds since
/// the epoch, always bound from the injected clock. The database itself guarantees two invariants of
/// DESIGN.md so that no code path can forget them:
/// - only the moves of `JobState.transitions` are possible (trigger `jobs_transition_allowed`);
/// - every state change appends an event (trigger `jobs_transition_event`) carrying the statement's
///   `transition_note` and `updated_at`, and events can never be updated (trigger `job_events_append_only`).
public enum JobSchema {
    public static let schema = Schema(component: "jobqueue", migrations: [version1])

    static let states = "'pending','ready','running','succeeded','failed','discarded','cancelled'"

    static let version1 = """
    CREATE TABLE job_runs (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL CHECK (length(kind) > 0),
        name TEXT NOT NULL,
        unique_key TEXT UNIQUE,
        manifest TEXT NOT NULL CHECK (json_valid(manifest)),
        created_at INTEGER NOT NULL,
        cancelled_at INTEGER
    ) STRICT;

    CREATE TABLE jobs (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES job_runs(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (length(kind) > 0),
        state TEXT NOT NULL CHECK (state IN (\(states))),
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
        UNIQUE (run_id, name),
        -- a lease exists exactly while the job runs
        CHECK ((state = 'running') = (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL)),
        -- a running job has been claimed at least once: its attempt is its fencing token
        CHECK (state <> 'running' OR attempt >= 1),
        CHECK (state <> 'succeeded' OR output IS NOT NULL),
        CHECK ((state IN ('succeeded','discarded','cancelled')) = (finished_at IS NOT NULL))
    ) STRICT;

    -- The claim walks this index in (priority, run_at, id) order and stops at the first due job.
    CREATE INDEX jobs_claimable ON jobs (kind, priority, run_at, id) WHERE state IN ('ready','failed');
    CREATE INDEX jobs_leases ON jobs (lease_expires_at) WHERE state = 'running';
    -- Jobs of a run are found through the UNIQUE (run_id, name) index; an index with the state in it would
    -- be rewritten by every transition (each commit writes every page it touches to the WAL).

    CREATE TABLE job_dependencies (
        job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
        depends_on INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
        PRIMARY KEY (job_id, depends_on),
        CHECK (job_id <> depends_on)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX job_dependencies_parent ON job_dependencies (depends_on, job_id);

    CREATE TABLE job_events (
        id INTEGER PRIMARY KEY,
        job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
        -- A copy for printing; the rows go with their job (and the job with its run), so no second index.
        run_id INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        from_state TEXT CHECK (from_state IS NULL OR from_state IN (\(states))),
        to_state TEXT NOT NULL CHECK (to_state IN (\(states))),
        at INTEGER NOT NULL,
        message TEXT
    ) STRICT;
    CREATE INDEX job_events_job ON job_events (job_id, id);

    CREATE TRIGGER jobs_initial_state BEFORE INSERT ON jobs
    WHEN NEW.state NOT IN ('pending','ready')
    BEGIN SELECT RAISE(ABORT, 'a job is created pending or ready'); END;

    CREATE TRIGGER jobs_transition_allowed BEFORE UPDATE OF state ON jobs
    WHEN OLD.state IS NOT NEW.state AND OLD.state || '>' || NEW.state NOT IN (
        'pending>ready', 'pending>cancelled',
        'ready>running', 'ready>cancelled',
        'running>succeeded', 'running>failed', 'running>discarded', 'running>cancelled', 'running>ready',
        'failed>running', 'failed>cancelled', 'failed>ready',
        'discarded>ready', 'discarded>pending',
        'cancelled>ready', 'cancelled>pending')
    BEGIN SELECT RAISE(ABORT, 'job state transition not allowed'); END;

    CREATE TRIGGER jobs_created_event AFTER INSERT ON jobs
    BEGIN
        INSERT INTO job_events (job_id, run_id, attempt, from_state, to_state, at, message)
        VALUES (NEW.id, NEW.run_id, NEW.attempt, NULL, NEW.state, NEW.created_at, NEW.transition_note);
    END;

    CREATE TRIGGER jobs_transition_event AFTER UPDATE OF state ON jobs
    WHEN OLD.state IS NOT NEW.state
    BEGIN
        INSERT INTO job_events (job_id, run_id, attempt, from_state, to_state, at, message)
        VALUES (NEW.id, NEW.run_id, NEW.attempt, OLD.state, NEW.state, NEW.updated_at, NEW.transition_note);
    END;

    CREATE TRIGGER job_events_append_only BEFORE UPDATE ON job_events
    BEGIN SELECT RAISE(ABORT, 'job events are never rewritten'); END;
    """
}
