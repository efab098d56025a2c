import Storage

/// The job engine's tables, as ordered migrations (never edit a shipped one; append a new one).
///
/// Three tables: `job_runs` (one row per enqueued run description, with the range of its job ids), `jobs`
/// (one row per step, with its lease and fencing token) and `job_events` (the append-only history, chained
/// per job). Times are integer milliseconds since the epoch, always bound from the injected clock. The
/// database itself guarantees the invariants of DESIGN.md so that no code path can forget them:
/// - only the moves of `JobState.transitions` are possible (trigger `jobs_transition_allowed`);
/// - every state change appends an event (trigger `jobs_transition_event`) carrying the statement's
///   `transition_note` and `updated_at`, and events can never be updated (trigger `job_events_append_only`);
/// - a job lies in its run's id range and an event continues its job's chain (`version3` says why these
///   replaced two indexes).
/// `version4` gives each job a checkpoint pointer column of its own, `version5` a timeout of its own.
public enum JobSchema {
    public static let schema = Schema(component: "jobqueue", migrations: [version1, version2, version3, version4, version5])

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

    /// The same tables without `IN (…)` lists in their CHECKs and triggers, and the idempotency key's index
    /// without the rows that have none.
    ///
    /// A list of more than two values makes SQLite build a small temporary table each time the expression is
    /// evaluated in a trigger or a row check: five of them per state change (the two job CHECKs, the
    /// transition trigger, the event's two CHECKs), a measurable share of a claim-and-complete (BENCHMARKS.md,
    /// code choices). Comparisons joined by OR and a CASE on the old state say the same without it.
    /// `unique_key TEXT UNIQUE` indexed every run, also those without a key; a partial index indexes only
    /// keyed runs (one B-tree page less written per enqueue). SQLite cannot change a column's constraints in
    /// place, so the three tables are rebuilt (the documented procedure: new table, copy, drop, rename, with
    /// foreign keys off while the migration runs; `Database.migrate` does that and checks them before it
    /// commits).
    static let version2 = """
    CREATE TABLE job_runs_v2 (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL CHECK (length(kind) > 0),
        name TEXT NOT NULL,
        unique_key TEXT,
        manifest TEXT NOT NULL CHECK (json_valid(manifest)),
        created_at INTEGER NOT NULL,
        cancelled_at INTEGER
    ) STRICT;
    INSERT INTO job_runs_v2 (id, kind, name, unique_key, manifest, created_at, cancelled_at)
        SELECT id, kind, name, unique_key, manifest, created_at, cancelled_at FROM job_runs;
    DROP TABLE job_runs;
    ALTER TABLE job_runs_v2 RENAME TO job_runs;
    CREATE UNIQUE INDEX job_runs_unique_key ON job_runs (unique_key) WHERE unique_key IS NOT NULL;

    CREATE TABLE jobs_v2 (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES job_runs(id) ON DELETE CASCADE,
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
        UNIQUE (run_id, name),
        -- a lease exists exactly while the job runs
        CHECK ((state = 'running') = (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL)),
        -- a running job has been claimed at least once: its attempt is its fencing token
        CHECK (state <> 'running' OR attempt >= 1),
        CHECK (state <> 'succeeded' OR output IS NOT NULL),
        CHECK ((state = 'succeeded' OR state = 'discarded' OR state = 'cancelled') = (finished_at IS NOT NULL))
    ) STRICT;
    INSERT INTO jobs_v2 (id, run_id, name, kind, state, priority, run_at, attempt, max_attempts, input, output, error,
                         lease_owner, lease_expires_at, heartbeat_at, waiting_on, transition_note, created_at,
                         updated_at, finished_at)
        SELECT id, run_id, name, kind, state, priority, run_at, attempt, max_attempts, input, output, error,
               lease_owner, lease_expires_at, heartbeat_at, waiting_on, transition_note, created_at, updated_at,
               finished_at FROM jobs;
    DROP TABLE jobs;
    ALTER TABLE jobs_v2 RENAME TO jobs;
    CREATE INDEX jobs_claimable ON jobs (kind, priority, run_at, id) WHERE state IN ('ready','failed');
    CREATE INDEX jobs_leases ON jobs (lease_expires_at) WHERE state = 'running';

    CREATE TABLE job_events_v2 (
        id INTEGER PRIMARY KEY,
        job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
        run_id INTEGER NOT NULL,
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
    INSERT INTO job_events_v2 (id, job_id, run_id, attempt, from_state, to_state, at, message)
        SELECT id, job_id, run_id, attempt, from_state, to_state, at, message FROM job_events;
    DROP TABLE job_events;
    ALTER TABLE job_events_v2 RENAME TO job_events;
    CREATE INDEX job_events_job ON job_events (job_id, id);

    CREATE TRIGGER jobs_initial_state BEFORE INSERT ON jobs
    WHEN NEW.state <> 'pending' AND NEW.state <> 'ready'
    BEGIN SELECT RAISE(ABORT, 'a job is created pending or ready'); END;

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
