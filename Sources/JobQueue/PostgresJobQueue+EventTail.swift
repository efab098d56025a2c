import AdaptCore
import Storage

/// Following the event stream on PostgreSQL without skipping an event that commits late.
///
/// An event's id is drawn when it is inserted, and transactions commit in any order: a reader that continued
/// from the last id it saw would skip an event that commits after one with a higher id. Each event records its
/// transaction instead (`job_events.xact`, `PostgresJobSchema.eventTransactions`), and the stream is read in
/// windows of transactions: every transaction below the snapshot's xmin has ended (PostgreSQL docs, 9.27,
/// `pg_snapshot_xmin`: "all transaction IDs less than xmin are either committed and visible, or rolled back and
/// dead"), and every later transaction gets a higher id, so the events of the window `[settledBefore, xmin)` are
/// final once read. An uncommitted event holds back the window's end rather than being skipped; it comes in a
/// later window, perhaps after events with higher ids.
///
/// The horizon is the cluster's: any transaction that wrote, in any database of the server, delays what a
/// follower sees until it ends (it loses nothing).
extension PostgresJobQueue {
    public func tail(run: RunID?, job: JobID?, after cursor: EventCursor, limit: Int) throws -> EventPage {
        guard let scope = try eventScope(run: run, job: job) else { return EventPage(events: [], next: cursor) }
        // Read before the events, in a statement of its own: the transactions below it have ended by then, so
        // the later snapshot of the events' statement sees all of theirs.
        let end = try cursor.windowEnd ?? settledHorizon()
        let events = try windowEvents(scope, from: cursor.settledBefore, before: end, afterID: cursor.lastID, limit: limit)
        if let last = events.last, events.count == limit {
            return EventPage(events: events, next: EventCursor(lastID: last.id, settledBefore: cursor.settledBefore, windowEnd: end))
        }
        return EventPage(events: events, next: EventCursor(lastID: 0, settledBefore: end, windowEnd: nil))
    }

    public func remainingEvents(run: RunID?, job: JobID?, after cursor: EventCursor) throws -> [EventRecord] {
        guard let scope = try eventScope(run: run, job: job) else { return [] }
        var a = NumberedArguments()
        let sql = """
            SELECT * FROM job_events WHERE xact >= \(a.add(cursor.settledBefore))::text::xid8
              AND NOT (xact < \(a.add(cursor.windowEnd ?? cursor.settledBefore))::text::xid8 AND id <= \(a.add(cursor.lastID)))
              AND \(scope.chainCondition(&a))
            ORDER BY id
            """
        return try connection.query(sql, arguments: a.values).map(EventRecord.init(row:))
    }

    /// True when events after `cursor` have committed but are held back by an older transaction still open: the
    /// follower must look again when that one ends, which nothing announces.
    public func hasUnsettledEvents(after cursor: EventCursor) throws -> Bool {
        try connection.queryOne("SELECT 1 FROM job_events WHERE xact >= $1::text::xid8 LIMIT 1", cursor.settledBefore) != nil
    }

    /// The id below which every transaction of the server has ended.
    func settledHorizon() throws -> Int64 {
        let value = try connection.scalar("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")
        guard let horizon = value.integerValue else {
            throw StorageError.postgres(sqlstate: "", message: "pg_snapshot_xmin returned \(value)", sql: "pg_snapshot_xmin")
        }
        return horizon
    }

    /// The events of transactions in `[from, end)` with ids above `afterID`, in id order.
    private func windowEvents(_ scope: EventScope, from start: Int64, before end: Int64, afterID: Int64,
                              limit: Int) throws -> [EventRecord] {
        guard start < end else { return [] }
        var a = NumberedArguments()
        // A run's or job's first window covers all history: its event chains find its events without reading
        // the others. Later windows are recent transactions, found through the (xact, id) index.
        let sql = """
            SELECT * FROM job_events
            WHERE xact >= \(a.add(start))::text::xid8 AND xact < \(a.add(end))::text::xid8 AND id > \(a.add(afterID))
              AND \(start == 0 ? scope.chainCondition(&a) : scope.columnCondition(&a))
            ORDER BY id LIMIT \(a.add(limit))
            """
        return try connection.query(sql, arguments: a.values).map(EventRecord.init(row:))
    }

    /// Which events a read covers: all, or those of a range of job ids (a run's, or one job).
    struct EventScope {
        let jobs: ClosedRange<Int64>?

        /// The jobs' events, found by walking each job's chain back from its last event.
        func chainCondition(_ a: inout NumberedArguments) -> String {
            guard let jobs else { return "true" }
            return """
                id IN (WITH RECURSIVE chain(id) AS (
                    SELECT last_event_id FROM jobs
                    WHERE id BETWEEN \(a.add(jobs.lowerBound)) AND \(a.add(jobs.upperBound)) AND last_event_id IS NOT NULL
                    UNION ALL
                    SELECT e.previous_id FROM job_events e JOIN chain c ON e.id = c.id WHERE e.previous_id IS NOT NULL)
                  SELECT id FROM chain)
                """
        }

        /// The jobs' events, by their `job_id` column.
        func columnCondition(_ a: inout NumberedArguments) -> String {
            guard let jobs else { return "true" }
            return "job_id BETWEEN \(a.add(jobs.lowerBound)) AND \(a.add(jobs.upperBound))"
        }
    }

    /// Statement arguments, each named by its `$n` as it is added.
    struct NumberedArguments {
        private(set) var values: [SQLBindable] = []

        mutating func add(_ value: SQLBindable) -> String {
            values.append(value)
            return "$\(values.count)"
        }
    }

    /// nil when the filter names no job (an unknown run, or a job outside the run).
    func eventScope(run: RunID?, job: JobID?) throws -> EventScope? {
        var jobs: ClosedRange<Int64>? = nil
        if let run {
            guard let ids = try jobIDs(of: run) else { return nil }
            jobs = ids
        }
        if let job {
            if let ids = jobs, !ids.contains(job.value) { return nil }
            jobs = job.value...job.value
        }
        return EventScope(jobs: jobs)
    }
}
