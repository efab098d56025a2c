import AdaptCore
import Foundation
import JobQueue
import Steps
import Storage

/// What `runs`, `jobs`, `show` and `events` read of the job table: records, a run or a job with what explains it,
/// and the event stream `events --follow` prints as it grows.
public struct JobHistory: Sendable {
    let queue: any JobEngine
    /// Where erased inputs are looked up: the database holding the job tables.
    let connection: any SQLConnection
    /// The state directory's database, whose commits wake a follower; nil on PostgreSQL.
    let database: Database?
    /// The PostgreSQL engine and where it is, for a follower's own listening connection; nil on SQLite.
    let postgres: (queue: PostgresJobQueue, connectionString: String)?

    /// Reads the job table of `database` (opened read-only by a listing).
    public init(database: Database) throws {
        queue = try JobQueue(database: database)
        connection = database
        self.database = database
        postgres = nil
    }

    /// Reads the job tables of the PostgreSQL database `connectionString` names.
    public init(postgres connectionString: String) throws {
        let queue = try PostgresJobQueue(connectionString: connectionString)
        self.queue = queue
        connection = queue.connection
        postgres = (queue, connectionString)
        database = nil
    }

    /// The newest `limit` runs, newest first.
    public func runs(limit: Int) throws -> [RunRecord] {
        try queue.runs(limit: limit)
    }

    /// The newest `limit` jobs matching, oldest first; a run that does not exist is `unknownRun`.
    public func jobs(run: RunID?, state: JobState?, kind: String?, limit: Int) throws -> [JobRecord] {
        if let run, try !queue.runExists(run) { throw JobQueueError.unknownRun(run) }
        return try queue.jobs(matching: JobQueue.JobFilter(run: run, state: state, kind: kind, limit: limit))
    }

    /// A run as `show run-N` prints it: its jobs, and the inputs they read that were erased since.
    public struct RunDetail: Sendable {
        public let run: RunRecord
        public let jobs: [JobRecord]
        public let erased: [ErasedInput]
    }

    /// A job as `show job-N` prints it: the jobs it waits for, its events, and its erased inputs.
    public struct JobDetail: Sendable {
        public let job: JobRecord
        public let parents: [JobID]
        public let events: [EventRecord]
        public let erased: [ErasedInput]
    }

    /// What `show ID` names: a run, a job, or (a bare number) whichever exists.
    public enum Shown: Sendable {
        case run(RunDetail)
        case job(JobDetail)
    }

    /// The run or job `identifier` names; a bare number naming both is ambiguous, one naming neither unknown.
    public func show(_ identifier: Identifier, text: String) throws -> Shown {
        switch identifier {
        case let .run(id): return .run(try run(id))
        case let .job(id): return .job(try job(id))
        case let .number(n):
            let isRun = try queue.runExists(RunID(n)), isJob = try queue.jobExists(JobID(n))
            if isRun && isJob { throw JobQueueError.ambiguousIdentifier(n) }
            if isRun { return .run(try run(RunID(n))) }
            if isJob { return .job(try job(JobID(n))) }
            throw JobQueueError.unknownIdentifier(text)
        }
    }

    public func run(_ id: RunID) throws -> RunDetail {
        let run = try queue.run(id)
        let jobs = try queue.jobs(matching: .init(run: id, limit: Int.max))
        let erased = try jobs.sorted { $0.id < $1.id }.flatMap { try erasedInputs(of: $0) }
        return RunDetail(run: run, jobs: jobs, erased: erased)
    }

    public func job(_ id: JobID) throws -> JobDetail {
        let job = try queue.job(id)
        let parents = try queue.parents(of: id)
        let events = try queue.events(run: nil, job: id, afterID: 0, limit: 10_000)
        return JobDetail(job: job, parents: parents, events: events, erased: try erasedInputs(of: job))
    }

    private func erasedInputs(of job: JobRecord) throws -> [ErasedInput] {
        try ErasedInput.of(job, in: connection)
    }

    /// Throws `unknownRun` or `unknownJob` for a filter that names nothing.
    public func requireExisting(run: RunID?, job: JobID?) throws {
        if let run, try !queue.runExists(run) { throw JobQueueError.unknownRun(run) }
        if let job, try !queue.jobExists(job) { throw JobQueueError.unknownJob(job) }
    }

    /// At most `limit` events after `afterID`, oldest first.
    public func events(run: RunID?, job: JobID?, afterID: Int64 = 0, limit: Int) throws -> [EventRecord] {
        try queue.events(run: run, job: job, afterID: afterID, limit: limit)
    }

    /// Hands `print` the last `limit` events recorded so far (as `tail -n` does), then every new event once, in
    /// batches of at most `limit`; returns once `run` (when given) has finished, else runs until the process is
    /// stopped. Wakes on each commit to the SQLite database; on
    /// PostgreSQL when a transaction that wrote events commits (`PostgresEventFollower`). There an event appears
    /// once every transaction older than its own has ended (`PostgresJobQueue.tail`), so one committed late is not
    /// skipped; while such a transaction holds committed events back it looks again every
    /// `heldBackLookMilliseconds`, since a transaction that ends without writing events notifies no one.
    public func follow(run: RunID?, job: JobID?, limit: Int, _ print: ([EventRecord]) -> Void) async throws {
        // A role that may only read cannot list itself as a follower: it looks every `heldBackLookMilliseconds`
        // instead, as does everyone while events are held back (a server it cannot reach fails the first read).
        let follower = postgres.flatMap { try? PostgresEventFollower(connectionString: $0.connectionString) }
        var cursor = EventCursor()
        // The backlog is read page by page and only its last `limit` events are kept.
        var backlog: [EventRecord]? = []
        while true {
            let version = try database?.dataVersion()
            let page = try queue.tail(run: run, job: job, after: cursor, limit: limit)
            cursor = page.next
            if var kept = backlog {
                kept = Array((kept + page.events).suffix(limit))
                if page.events.count == limit { backlog = kept; continue }
                print(kept)
                backlog = nil
            } else {
                print(page.events)
                if page.events.count == limit { continue }
            }
            if let run, try queue.run(run).isFinished {
                // Read after the run was seen finished, so its last events are there; they have all committed,
                // so an unrelated transaction still open does not hold them back.
                let rest = try queue.remainingEvents(run: run, job: job, after: cursor)
                for start in stride(from: 0, to: rest.count, by: max(1, limit)) {
                    print(Array(rest[start..<min(start + max(1, limit), rest.count)]))
                }
                return
            }
            if let database {
                while try database.dataVersion() == version { try await Task.sleep(for: .milliseconds(5)) }
            } else if let follower, let postgres {
                // Blocks this task's thread: the command has nothing else to do meanwhile.
                let heldBack = try postgres.queue.hasUnsettledEvents(after: cursor)
                _ = try follower.waitForEvents(timeoutMilliseconds: heldBack ? Self.heldBackLookMilliseconds : Self.idleLookMilliseconds)
            } else {
                try await Task.sleep(for: .milliseconds(Self.heldBackLookMilliseconds))
            }
        }
    }

    /// While committed events wait for an older transaction to end.
    static let heldBackLookMilliseconds = 20
    /// Otherwise a notification wakes the follower; this look is a safety net, not the mechanism.
    static let idleLookMilliseconds = 1_000
}
