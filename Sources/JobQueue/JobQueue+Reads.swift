import AdaptCore
import Storage

/// Read-only queries: listings for the command line, and the cheap checks an idle worker polls.
extension JobQueue {
    /// Which jobs `jobs(matching:)` lists.
    public struct JobFilter: Sendable {
        public var run: RunID?
        public var state: JobState?
        public var kind: String?
        /// The newest `limit` matching jobs are listed, oldest first.
        public var limit: Int

        public init(run: RunID? = nil, state: JobState? = nil, kind: String? = nil, limit: Int = 100) {
            self.run = run
            self.state = state
            self.kind = kind
            self.limit = limit
        }
    }

    /// The newest `limit` runs, newest first.
    public func runs(limit: Int = 50) throws -> [RunRecord] {
        try database.query(Self.runSelect + " GROUP BY r.id ORDER BY r.id DESC LIMIT ?", limit).map(RunRecord.init(row:))
    }

    /// One run, or `unknownRun`.
    public func run(_ id: RunID) throws -> RunRecord {
        guard let row = try database.queryOne(Self.runSelect + " WHERE r.id = ? GROUP BY r.id", id) else {
            throw JobQueueError.unknownRun(id)
        }
        return try RunRecord(row: row)
    }

    public func runExists(_ id: RunID) throws -> Bool {
        try database.queryOne("SELECT 1 FROM job_runs WHERE id = ?", id) != nil
    }

    public func jobExists(_ id: JobID) throws -> Bool {
        try database.queryOne("SELECT 1 FROM jobs WHERE id = ?", id) != nil
    }

    public func jobs(matching filter: JobFilter = JobFilter()) throws -> [JobRecord] {
        var conditions: [String] = []
        var arguments: [SQLBindable] = []
        if let run = filter.run {
            guard let ids = try jobIDs(of: run) else { return [] }
            conditions.append("id BETWEEN ? AND ?")
            arguments += [ids.lowerBound, ids.upperBound]
        }
        if let state = filter.state { conditions.append("state = ?"); arguments.append(state.rawValue) }
        if let kind = filter.kind { conditions.append("kind = ?"); arguments.append(kind) }
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        arguments.append(filter.limit)
        return try database.query("""
            SELECT * FROM (SELECT * FROM jobs \(whereClause) ORDER BY id DESC LIMIT ?) ORDER BY id
            """, arguments: arguments).map(JobRecord.init(row:))
    }

    /// One job, or `unknownJob`.
    public func job(_ id: JobID) throws -> JobRecord {
        guard let row = try database.queryOne("SELECT * FROM jobs WHERE id = ?", id) else {
            throw JobQueueError.unknownJob(id)
        }
        return try JobRecord(row: row)
    }

    /// The jobs `id` waits for.
    public func parents(of id: JobID) throws -> [JobID] {
        try database.query("SELECT depends_on FROM job_dependencies WHERE job_id = ? ORDER BY depends_on", id)
            .compactMap { $0.int64("depends_on").map(JobID.init) }
    }

    /// Events in the order they happened, after event `afterID`, optionally of one run or one job (found by
    /// walking the jobs' event chains back to `afterID`).
    public func events(run: RunID? = nil, job: JobID? = nil, afterID: Int64 = 0, limit: Int = 10_000) throws -> [EventRecord] {
        var jobs: ClosedRange<Int64>? = nil
        if let run {
            guard let ids = try jobIDs(of: run) else { return [] }
            jobs = ids
        }
        if let job {
            if let ids = jobs, !ids.contains(job.value) { return [] }
            jobs = job.value...job.value
        }
        guard let jobs else {
            return try database.query("SELECT * FROM job_events WHERE id > ? ORDER BY id LIMIT ?", afterID, limit)
                .map(EventRecord.init(row:))
        }
        return try database.query("""
            SELECT * FROM job_events WHERE id IN (\(Self.eventChains)) ORDER BY id LIMIT ?
            """, jobs.lowerBound, jobs.upperBound, afterID, afterID, limit).map(EventRecord.init(row:))
    }

    /// The events after `cursor`. One writer at a time commits, so ids become visible in order and the last id
    /// read is a sound place to continue from.
    public func tail(run: RunID?, job: JobID?, after cursor: EventCursor, limit: Int) throws -> EventPage {
        let events = try events(run: run, job: job, afterID: cursor.lastID, limit: limit)
        var next = cursor
        next.lastID = events.last?.id ?? cursor.lastID
        return EventPage(events: events, next: next)
    }

    public func remainingEvents(run: RunID?, job: JobID?, after cursor: EventCursor) throws -> [EventRecord] {
        try events(run: run, job: job, afterID: cursor.lastID, limit: Int.max)
    }

    // MARK: What an idle worker polls

    /// True when a job of one of `kinds` could be claimed now (a read: no write lock is taken).
    public func hasClaimableWork(kinds: [String]) throws -> Bool {
        try !database.query("""
            SELECT 1 FROM jobs WHERE state IN ('ready','failed') AND kind IN (\(Self.placeholders(kinds.count)))
              AND run_at <= ? LIMIT 1
            """, arguments: kinds as [SQLBindable] + [now]).isEmpty
    }

    /// True while a job of `kinds` is running, or is due now or within `outlook`'s default horizon (or is pending
    /// behind such a job): what a worker told to exit when idle waits for. Steps scheduled later do not count.
    public func hasUnfinishedWork(kinds: [String]) throws -> Bool {
        try outlook(kinds: kinds).hasWorkNow
    }

    /// True when some running job's lease has expired (so `rescueExpiredLeases` has work).
    public func hasExpiredLeases() throws -> Bool {
        try database.queryOne("SELECT 1 FROM jobs WHERE state = 'running' AND lease_expires_at < ? LIMIT 1", now) != nil
    }

    /// The next time something of `kinds` becomes due without any commit announcing it: a job's `run_at`
    /// (a retry's backoff, a snooze, a scheduled step) or a lease's expiry (to rescue it). nil when nothing
    /// is scheduled.
    public func nextWakeTime(kinds: [String]) throws -> Int64? {
        let list = Self.placeholders(kinds.count)
        let row = try database.query("""
            SELECT min(t) AS t FROM (
                SELECT min(run_at) AS t FROM jobs WHERE state IN ('ready','failed') AND kind IN (\(list))
                UNION ALL
                SELECT min(lease_expires_at) + 1 FROM jobs WHERE state = 'running')
            """, arguments: kinds).first
        return row?.int64("t")
    }

    // MARK: Is there work now, or only later

    /// What `adapt work --exit-when-idle` looks at: the work of some kinds that is due now or soon, and what
    /// waits for later.
    public struct WorkOutlook: Sendable, Equatable {
        /// Jobs running now.
        public var running: Int
        /// Ready or retrying jobs due within the horizon.
        public var due: Int
        /// Pending jobs whose run has a job running or due within the horizon: they will follow.
        public var following: Int
        /// Ready or retrying jobs due after the horizon (an `--at` far ahead, a long backoff, a clock that was
        /// ahead at enqueue), and pending jobs that can only follow them.
        public var scheduledLater: Int
        public var pendingBehindLater: Int
        /// The earliest `run_at` among `scheduledLater` (ms since the epoch).
        public var earliestLater: Int64?

        /// Two minutes, the default lease of train and eval: a retry's backoff within it (the first several
        /// are: 0.5–1 s, doubling) is the same night's work to wait for, while a run scheduled past it is
        /// tomorrow's, which a run-until-idle invocation must not sit out (it would block every later night
        /// under a oneshot timer service). One lease, because a dead worker's job comes back within one lease
        /// as well.
        public static let defaultHorizonMilliseconds: Int64 = 120_000

        public var hasWorkNow: Bool { running + due + following > 0 }
        public var waiting: Int { scheduledLater + pendingBehindLater }

        /// "1 step scheduled for later (earliest 2027-01-01T00:00:00.000Z, in 31 d), 4 pending behind it":
        /// counts and times only.
        public func waitingDescription(now: Int64) -> String {
            var parts: [String] = []
            if scheduledLater > 0 {
                var text = "\(scheduledLater) step\(scheduledLater == 1 ? "" : "s") scheduled for later"
                if let at = earliestLater { text += " (earliest \(Timestamp.iso8601(at)), in \(Self.span(at - now)))" }
                parts.append(text)
            }
            if pendingBehindLater > 0 {
                parts.append("\(pendingBehindLater) pending step\(pendingBehindLater == 1 ? "" : "s") waiting on steps scheduled for later")
            }
            return parts.isEmpty ? "nothing waits" : parts.joined(separator: ", ")
        }

        static func span(_ milliseconds: Int64) -> String {
            let seconds = max(milliseconds, 0) / 1000
            if seconds < 120 { return "\(seconds) s" }
            if seconds < 7200 { return "\(seconds / 60) min" }
            if seconds < 172_800 { return "\(seconds / 3600) h" }
            return "\(seconds / 86_400) d"
        }
    }

    /// The work of `kinds` now and later, `horizonMilliseconds` deciding which is which (a read).
    public func outlook(kinds: [String], horizonMilliseconds: Int64 = WorkOutlook.defaultHorizonMilliseconds) throws -> WorkOutlook {
        let list = Self.placeholders(kinds.count)
        let soon = now + horizonMilliseconds
        // The runs with work now are found once (SQLite keeps an uncorrelated IN list for the whole query): per
        // pending job, a search of its run's jobs would cost a long chain of pending steps its length squared.
        let row = try database.query("""
            SELECT coalesce(sum(j.state = 'running'), 0) AS running,
                   coalesce(sum(j.state IN ('ready','failed') AND j.run_at <= ?), 0) AS due,
                   coalesce(sum(j.state IN ('ready','failed') AND j.run_at > ?), 0) AS later,
                   min(CASE WHEN j.state IN ('ready','failed') AND j.run_at > ? THEN j.run_at END) AS earliest,
                   coalesce(sum(j.state = 'pending' AND j.run_id IN (
                       SELECT run_id FROM jobs WHERE state = 'running' OR (state IN ('ready','failed') AND run_at <= ?))), 0) AS following,
                   coalesce(sum(j.state = 'pending'), 0) AS pending
            FROM jobs j WHERE j.state IN ('pending','ready','running','failed') AND j.kind IN (\(list))
            """, arguments: [soon, soon, soon, soon] as [SQLBindable] + kinds).first
        let following = row?.int("following") ?? 0
        return WorkOutlook(running: row?.int("running") ?? 0, due: row?.int("due") ?? 0, following: following,
                           scheduledLater: row?.int("later") ?? 0,
                           pendingBehindLater: (row?.int("pending") ?? 0) - following,
                           earliestLater: row?.int64("earliest"))
    }

    static let runSelect = """
        SELECT r.id, r.kind, r.name, r.unique_key, r.manifest, r.created_at, r.cancelled_at,
               max(j.updated_at) AS last_update, max(j.attempt) AS max_attempt,
               \(JobState.allCases.map { "sum(j.state = '\($0.rawValue)') AS n_\($0.rawValue)" }.joined(separator: ", "))
        FROM job_runs r LEFT JOIN jobs j ON j.id BETWEEN r.first_job_id AND r.last_job_id
        """
}
