extension PostgresJobSchema {
    /// A transaction that writes events notifies channel `adapt_job_events`, but only while someone follows the
    /// stream: `adapt events --follow` then waits for commits instead of looking every few
    /// milliseconds (`PostgresEventFollower`).
    ///
    /// Only while followed, because a notifying transaction holds a lock from just before its commit until after
    /// it, so that notifications queue in commit order (PostgreSQL's async.c, `PreCommit_Notify`): notifying
    /// transactions commit one after the other, fsync included, and on every claim and completion that would keep
    /// the workers' commits from sharing a WAL flush. A follower lists its listening session's process id in
    /// `job_event_followers`; a row whose process has ended (a follower killed with Ctrl-C leaves one) makes no
    /// transaction notify, since the trigger asks the server's activity table whether that process lives, and the
    /// next follower deletes it. The payload is empty: PostgreSQL sends a transaction's identical notifications
    /// once (docs, NOTIFY), and the follower reads what is new itself.
    static let eventNotifications = """
    CREATE TABLE job_event_followers (pid INTEGER PRIMARY KEY);

    CREATE FUNCTION job_events_notify_followers() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF EXISTS (SELECT 1 FROM job_event_followers f WHERE EXISTS (SELECT 1 FROM pg_stat_get_activity(f.pid))) THEN
            PERFORM pg_notify('\(eventChannel)', '');
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER job_events_notify_followers AFTER INSERT ON job_events
        FOR EACH STATEMENT EXECUTE FUNCTION job_events_notify_followers();
    """

    /// The channel `job_events_notify_followers` notifies.
    public static let eventChannel = "adapt_job_events"
}
