import Storage

/// Where a follower of the event stream on PostgreSQL (`adapt events --follow`) waits for new events: a connection
/// of its own that listens on `PostgresJobSchema.eventChannel` and is listed in `job_event_followers`, so that
/// every transaction writing events notifies it when it commits (`PostgresJobSchema.eventNotifications`).
public final class PostgresEventFollower: Sendable {
    private let connection: PostgresConnection

    /// Listens, then lists itself (deleting the rows of followers whose sessions ended): a transaction committing
    /// after this returns notifies it, so a read of the stream after `init` misses no wake-up.
    public init(connectionString: String) throws {
        connection = try PostgresConnection(connectionString)
        try follow()
    }

    private func follow() throws {
        try connection.listen(PostgresJobSchema.eventChannel)
        try connection.transaction {
            try connection.run("DELETE FROM job_event_followers f WHERE NOT EXISTS (SELECT 1 FROM pg_stat_get_activity(f.pid))")
            try connection.run("INSERT INTO job_event_followers (pid) VALUES (pg_backend_pid()) ON CONFLICT DO NOTHING")
        }
    }

    /// After a failed wait (a server restart, a cut link): a new session, listening and listed again (the old
    /// session's row names a process that is gone, which no trigger counts). Throws while the server is out of reach.
    public func resume() throws {
        try connection.reconnect()
        try follow()
    }

    /// Unlisted, transactions stop notifying (a follower that is killed instead is skipped by the trigger).
    deinit {
        _ = try? connection.run("DELETE FROM job_event_followers WHERE pid = pg_backend_pid()")
    }

    /// Waits until a transaction that wrote events commits (true), or `timeoutMilliseconds` pass (false).
    public func waitForEvents(timeoutMilliseconds: Int) throws -> Bool {
        try !connection.waitForNotifications(timeoutMilliseconds: timeoutMilliseconds).isEmpty
    }
}
