import AdaptCore
import Storage

/// Read-only queries on PostgreSQL: the listings of `JobQueue+Reads.swift` and the checks an idle worker makes.
extension PostgresJobQueue {
    /// The newest `limit` runs, newest first.
    public func runs(limit: Int = 50) throws -> [RunRecord] {
        try connection.query(Self.runSelect + " GROUP BY r.id ORDER BY r.id DESC LIMIT $1", limit).map(RunRecord.init(row:))
    }

    /// One run, or `unknownRun`.
    public func run(_ id: RunID) throws -> RunRecord {
        guard let row = try connection.queryOne(Self.runSelect + " WHERE r.id = $1 GROUP BY r.id", id) else {
            throw JobQueueError.unknownRun(id)
        }
        return try RunRecord(row: row)
    }

    public func runExists(_ id: RunID) throws -> Bool {
        try connection.queryOne("SELECT 1 FROM job_runs WHERE id = $1", id) != nil
    }

    public func jobExists(_ id: JobID) throws -> Bool {
        try connection.queryOne("SELECT 1 FROM jobs WHERE id = $1", id) != nil
    }

    public func jobs(matching filter: JobQueue.JobFilter = JobQueue.JobFilter()) throws -> [JobRecord] {
        var conditions: [String] = []
        var arguments: [SQLBindable] = []
        func next() -> String { "$\(arguments.count + 1)" }
        if let run = filter.run {
            guard let ids = try jobIDs(of: run) else { return [] }
            conditions.append("id BETWEEN \(next()) AND $\(arguments.count + 2)")
            arguments += [ids.lowerBound, ids.upperBound]
        }
        if let state = filter.state { conditions.append("state = \(next())"); arguments.append(state.rawValue) }
        if let kind = filter.kind { conditions.append("kind = \(next())"); arguments.append(kind) }
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let limit = next()
        arguments.append(filter.limit)
        return try connection.query("""
            SELECT * FROM (SELECT * FROM jobs \(whereClause) ORDER BY id DESC LIMIT \(limit)) AS newest ORDER BY id
            """, arguments: arguments).map(JobRecord.init(row:))
    }

    /// One job, or `unknownJob`.
    public func job(_ id: JobID) throws -> JobRecord {
        guard let row = try connection.queryOne("SELECT * FROM jobs WHERE id = $1", id) else {
            throw JobQueueError.unknownJob(id)
        }
        return try JobRecord(row: row)
    }

    /// The jobs `id` waits for.
    public func parents(of id: JobID) throws -> [JobID] {
        try connection.query("SELECT depends_on FROM job_dependencies WHERE job_id = $1 ORDER BY depends_on", id)
            .compactMap { $0.int64("depends_on").map(JobID.init) }
    }

    /// Events in the order of their ids, after event `afterID`, optionally of one run or one job: the events
    /// committed so far. Ids are drawn when an event is written and transactions commit in any order, so an event
    /// may become visible after one with a higher id; a reader that follows the stream uses `tail(run:job:after:limit:)`.
    public func events(run: RunID? = nil, job: JobID? = nil, afterID: Int64 = 0, limit: Int = 10_000) throws -> [EventRecord] {
        guard let scope = try eventScope(run: run, job: job) else { return [] }
        guard let jobs = scope.jobs else {
            return try connection.query("SELECT * FROM job_events WHERE id > $1 ORDER BY id LIMIT $2", afterID, limit)
                .map(EventRecord.init(row:))
        }
        return try connection.query("""
            SELECT * FROM job_events WHERE id IN (\(Self.eventChains)) ORDER BY id LIMIT $4
            """, jobs.lowerBound, jobs.upperBound, afterID, limit).map(EventRecord.init(row:))
    }

    // MARK: What an idle worker looks at

    /// True when a job of one of `kinds` could be claimed now.
    public func hasClaimableWork(kinds: [String]) throws -> Bool {
        try !connection.query("""
            SELECT 1 FROM jobs WHERE state IN ('ready','failed') AND kind IN (\(Self.placeholders(kinds.count, from: 2)))
              AND run_at <= $1 LIMIT 1
            """, arguments: [now] as [SQLBindable] + kinds).isEmpty
    }

    /// True while a job of `kinds` is running, due now or soon, or pending behind such a job.
    public func hasUnfinishedWork(kinds: [String]) throws -> Bool {
        try outlook(kinds: kinds).hasWorkNow
    }

    /// True when some running job's lease has expired.
    public func hasExpiredLeases() throws -> Bool {
        try connection.queryOne("SELECT 1 FROM jobs WHERE state = 'running' AND lease_expires_at < $1 LIMIT 1", now) != nil
    }

    /// The next time something of `kinds` becomes due without a notification announcing it: a job's `run_at`
    /// or a lease's expiry. nil when nothing is scheduled.
    public func nextWakeTime(kinds: [String]) throws -> Int64? {
        try connection.query("""
            SELECT min(t) AS t FROM (
                SELECT min(run_at) AS t FROM jobs WHERE state IN ('ready','failed') AND kind IN (\(Self.placeholders(kinds.count)))
                UNION ALL
                SELECT min(lease_expires_at) + 1 FROM jobs WHERE state = 'running') AS times
            """, arguments: kinds).first?.int64("t")
    }

    /// The work of `kinds` now and later, `horizonMilliseconds` deciding which is which.
    public func outlook(kinds: [String],
                        horizonMilliseconds: Int64 = JobQueue.WorkOutlook.defaultHorizonMilliseconds) throws -> JobQueue.WorkOutlook {
        let row = try connection.query("""
            SELECT count(*) FILTER (WHERE j.state = 'running') AS running,
                   count(*) FILTER (WHERE j.state IN ('ready','failed') AND j.run_at <= $1) AS due,
                   count(*) FILTER (WHERE j.state IN ('ready','failed') AND j.run_at > $1) AS later,
                   min(j.run_at) FILTER (WHERE j.state IN ('ready','failed') AND j.run_at > $1) AS earliest,
                   count(*) FILTER (WHERE j.state = 'pending' AND j.run_id IN (
                       SELECT run_id FROM jobs WHERE state = 'running' OR (state IN ('ready','failed') AND run_at <= $1)))
                       AS following,
                   count(*) FILTER (WHERE j.state = 'pending') AS pending
            FROM jobs j WHERE j.state IN ('pending','ready','running','failed') AND j.kind IN (\(Self.placeholders(kinds.count, from: 2)))
            """, arguments: [now + horizonMilliseconds] as [SQLBindable] + kinds).first
        let following = row?.int("following") ?? 0
        return JobQueue.WorkOutlook(running: row?.int("running") ?? 0, due: row?.int("due") ?? 0, following: following,
                                    scheduledLater: row?.int("later") ?? 0,
                                    pendingBehindLater: (row?.int("pending") ?? 0) - following,
                                    earliestLater: row?.int64("earliest"))
    }

    /// `$from, $from+1, …`: `count` numbered parameters.
    static func placeholders(_ count: Int, from first: Int = 1) -> String {
        (first..<(first + count)).map { "$\($0)" }.joined(separator: ",")
    }

    static let runSelect = """
        SELECT r.id, r.kind, r.name, r.unique_key, r.manifest, r.created_at, r.cancelled_at,
               max(j.updated_at) AS last_update, max(j.attempt) AS max_attempt,
               \(JobState.allCases.map { "count(j.id) FILTER (WHERE j.state = '\($0.rawValue)') AS n_\($0.rawValue)" }
                    .joined(separator: ", "))
        FROM job_runs r LEFT JOIN jobs j ON j.id BETWEEN r.first_job_id AND r.last_job_id
        """
}
