extension PostgresJobSchema {
    /// Which `adapt work` announces a run that ended. With workers on several hosts every supervisor sees the run
    /// end, but the pipeline's notify command is to run once: the supervisor whose insert of the run's row
    /// succeeds announces it (`PostgresJobQueue.claimAnnouncement`), the others learn that someone did.
    static let runAnnouncements = """
    CREATE TABLE job_run_announcements (
        run_id BIGINT PRIMARY KEY REFERENCES job_runs (id) ON DELETE CASCADE,
        announced_at BIGINT NOT NULL
    );
    """

    /// At least once: the announcement counts as made when its command has run (`delivered_at`), and the
    /// announcing supervisor holds a session advisory lock on the run meanwhile. A supervisor killed in between
    /// loses its session and so its lock, and the next supervisor to look takes the announcement over. Rows of
    /// the version before were written just before their command ran, so they count as delivered.
    static let runAnnouncementDelivery = """
    ALTER TABLE job_run_announcements ADD COLUMN delivered_at BIGINT;
    UPDATE job_run_announcements SET delivered_at = announced_at;
    CREATE INDEX job_run_announcements_undelivered ON job_run_announcements (run_id) WHERE delivered_at IS NULL;
    """
}

extension PostgresJobQueue {
    /// Where the announcement of a run that ended stands, for one supervisor.
    public enum AnnouncementClaim: Sendable, Equatable {
        /// This session holds it: run the command, then `finishAnnouncement`.
        case ours
        /// Another live session is announcing it; look again later (it may die before it is done).
        case inHand
        /// Its command has run.
        case delivered
    }

    /// The first key of the announcements' two-key advisory locks ("an" in ASCII); the second is the run's id.
    static let announcementLockSpace: Int32 = 0x61_6E

    /// Takes the announcement of `run` for this connection's session unless another live session holds it or it
    /// was delivered. The lock is the session's, not a transaction's, so it lasts while the command runs and ends
    /// with the session if this process dies.
    public func claimAnnouncement(of run: RunID) throws -> AnnouncementClaim {
        let locked = try connection.query("SELECT pg_try_advisory_lock($1::int4, \(Self.announcementKey))::int AS locked",
                                          arguments: [Int64(Self.announcementLockSpace), run]).first?.bool("locked")
        guard locked == true else { return .inHand }
        let taken = try connection.query("""
            INSERT INTO job_run_announcements (run_id, announced_at) VALUES ($1, $2)
            ON CONFLICT (run_id) DO UPDATE SET announced_at = excluded.announced_at
            WHERE job_run_announcements.delivered_at IS NULL
            RETURNING run_id
            """, arguments: [run, now])
        guard taken.isEmpty else { return .ours }
        try unlockAnnouncement(of: run)
        return .delivered
    }

    /// Records that `run`'s announcement was made (its command ran, whatever it came to) and lets go of it.
    public func finishAnnouncement(of run: RunID) throws {
        try connection.run("UPDATE job_run_announcements SET delivered_at = $2 WHERE run_id = $1", arguments: [run, now])
        try unlockAnnouncement(of: run)
    }

    /// The runs whose announcement was taken and never finished: a supervisor died while making it.
    public func unfinishedAnnouncements() throws -> [RunID] {
        try connection.query("SELECT run_id FROM job_run_announcements WHERE delivered_at IS NULL ORDER BY run_id", arguments: [])
            .compactMap { $0.int64("run_id").map(RunID.init) }
    }

    private func unlockAnnouncement(of run: RunID) throws {
        _ = try connection.query("SELECT pg_advisory_unlock($1::int4, \(Self.announcementKey))::int",
                                 arguments: [Int64(Self.announcementLockSpace), run])
    }

    /// The lock's second key from a run id ($2), wrapped into 31 bits: two runs sharing a key only wait on each other.
    private static let announcementKey = "($2::bigint & 2147483647)::int4"
}
