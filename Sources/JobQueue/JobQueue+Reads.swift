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

    // MARK: What an idle worker polls

    /// True when a job of one of `kinds` could be claimed now (a read: no write lock is taken).
    public func hasClaimableWork(kinds: [String]) throws -> Bool {
        try !database.query("""
            SELECT 1 FROM jobs WHERE state IN ('ready','failed') AND kind IN (\(Self.placeholders(kinds.count)))
              AND run_at <= ? LIMIT 1
            """, arguments: kinds as [SQLBindable] + [now]).isEmpty
    }

    /// True while any job of `kinds` still has work ahead (pending, ready, running or waiting to retry).
    public func hasUnfinishedWork(kinds: [String]) throws -> Bool {
        try !database.query("""
            SELECT 1 FROM jobs WHERE state IN (\(JobState.sqlList(JobState.unfinished)))
              AND kind IN (\(Self.placeholders(kinds.count))) LIMIT 1
            """, arguments: kinds).isEmpty
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

    static let runSelect = """
        SELECT r.id, r.kind, r.name, r.unique_key, r.manifest, r.created_at, r.cancelled_at,
               max(j.updated_at) AS last_update, max(j.attempt) AS max_attempt,
               \(JobState.allCases.map { "sum(j.state = '\($0.rawValue)') AS n_\($0.rawValue)" }.joined(separator: ", "))
        FROM job_runs r LEFT JOIN jobs j ON j.id BETWEEN r.first_job_id AND r.last_job_id
        """
}
