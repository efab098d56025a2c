extension PostgresJobSchema {
    /// Which `adapt work` announces a run that ended. With workers on several hosts every supervisor sees the run
    /// end, but the pipeline's notify command is to run once: the supervisor whose insert of the run's row
    /// succeeds announces it (`PostgresJobQueue.claimAnnouncement`), the others learn that someone did. At most
    /// once, as on SQLite: a supervisor killed between its insert and the command leaves the run unannounced.
    static let runAnnouncements = """
    CREATE TABLE job_run_announcements (
        run_id BIGINT PRIMARY KEY REFERENCES job_runs (id) ON DELETE CASCADE,
        announced_at BIGINT NOT NULL
    );
    """
}

extension PostgresJobQueue {
    /// Whether this caller is the one to announce that `run` ended (true once per run, whoever asks).
    public func claimAnnouncement(of run: RunID) throws -> Bool {
        try !connection.query("""
            INSERT INTO job_run_announcements (run_id, announced_at) VALUES ($1, $2)
            ON CONFLICT (run_id) DO NOTHING RETURNING run_id
            """, arguments: [run, now]).isEmpty
    }
}
