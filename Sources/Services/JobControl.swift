import AdaptCore
import Foundation
import JobQueue
import Steps
import Storage
import WorkerRuntime

/// What the commands that change the job table do: enqueue, cancel, retry, rescue, prune the history, and run
/// the built-in `noop` jobs in this process (`adapt worker`), on the state directory's SQLite database or on a
/// PostgreSQL server.
public struct JobControl: Sendable {
    let queue: any WorkerEngine

    /// Changes the job table of `database` (created and migrated on first use).
    public init(database: Database) throws {
        queue = try JobQueue(database: database)
    }

    /// Changes the job tables of the PostgreSQL database `connectionString` names (created on first use).
    public init(postgres connectionString: String) throws {
        queue = try PostgresJobQueue(connectionString: connectionString)
    }

    public func enqueue(_ description: RunDescription) throws -> EnqueueResult {
        try queue.enqueue(description)
    }

    /// What `enqueue noop` asks for.
    public struct NoopRequest: Sendable {
        public var count: Int
        public var sleepMilliseconds: Int
        public var failRate: Double
        public var maxAttempts: Int
        public var priority: Int
        public var uniqueKey: String?
        public var chain: Bool

        public init(count: Int, sleepMilliseconds: Int, failRate: Double, maxAttempts: Int, priority: Int,
                    uniqueKey: String?, chain: Bool) {
            (self.count, self.sleepMilliseconds, self.failRate, self.maxAttempts, self.priority, self.uniqueKey, self.chain) =
                (count, sleepMilliseconds, failRate, maxAttempts, priority, uniqueKey, chain)
        }

        var input: JSONValue { NoopJob.input(sleepMilliseconds: sleepMilliseconds, failRate: failRate) }
    }

    /// One run of `count` noop jobs (a chain when asked), named noop-01… so they sort.
    public func enqueueNoop(_ request: NoopRequest) throws -> EnqueueResult {
        let count = request.count
        let width = String(count).count
        func name(_ i: Int) -> String { "noop-" + String(repeating: "0", count: width - String(i).count) + String(i) }
        let steps = (1...count).map { i in
            RunDescription.Step(name: name(i), kind: NoopJob.kind, input: request.input,
                                dependsOn: request.chain && i > 1 ? [name(i - 1)] : [],
                                priority: request.priority, maxAttempts: request.maxAttempts)
        }
        return try queue.enqueue(RunDescription(kind: "noop", name: "\(count) noop job\(count == 1 ? "" : "s")",
                                                uniqueKey: request.uniqueKey,
                                                manifest: .object(["count": .int(count), "chain": .bool(request.chain)]),
                                                steps: steps))
    }

    /// `count` runs of one noop job each, one transaction apiece, `intervalMilliseconds` apart (a trickle, for
    /// latency benchmarks). Each job's input carries its enqueue time, for the body to report its start latency.
    public func enqueueSeparateNoopRuns(_ request: NoopRequest, intervalMilliseconds: Int) async throws -> [EnqueueResult] {
        var results: [EnqueueResult] = []
        for i in 1...request.count {
            if i > 1 && intervalMilliseconds > 0 { try await Task.sleep(for: .milliseconds(intervalMilliseconds)) }
            var stamped = request.input.objectValue ?? [:]
            stamped["enqueued_at_us"] = .int(Int((Date().timeIntervalSince1970 * 1e6).rounded()))
            results.append(try queue.enqueue(RunDescription(kind: "noop", name: "noop", steps: [
                .init(name: "noop", kind: NoopJob.kind, input: .object(stamped), priority: request.priority,
                      maxAttempts: request.maxAttempts)])))
        }
        return results
    }

    public func cancel(run: RunID) throws -> JobQueue.CancelOutcome {
        try queue.cancel(run: run)
    }

    public func retry(job: JobID) throws -> JobQueue.RetryOutcome {
        try queue.retry(job: job)
    }

    public func rescueExpiredLeases() throws -> [JobQueue.Rescued] {
        try queue.rescueExpiredLeases()
    }

    /// Deletes finished runs older than `days`, then collects the blobs nothing owns now: on PostgreSQL the
    /// database's own blob table, on SQLite the state directory's files (`stateBlobs`, asked only there).
    public func pruneHistory(olderThanDays days: Double, stateBlobs: () throws -> BlobStore) throws
        -> (JobQueue.PruneOutcome, GarbageCollection.Report) {
        let age = Int64(days * 86_400_000)
        if let postgres = queue as? PostgresJobQueue {
            let outcome = try postgres.pruneHistory(olderThanMilliseconds: age)
            return (outcome, try PostgresBlobCollector(connection: postgres.connection).collect())
        }
        // The two initialisers make the queue one of the two engines.
        guard let sqlite = queue as? JobQueue else { preconditionFailure("a job engine other than SQLite's and PostgreSQL's") }
        let blobs = try stateBlobs()
        let outcome = try sqlite.pruneHistory(olderThanMilliseconds: age)
        return (outcome, try BlobCollector(database: sqlite.database, blobs: blobs).collect())
    }

    // MARK: adapt worker

    /// The job kinds `adapt worker` can run; the pipeline steps have their own worker executables.
    public static var workerKinds: [String] { handlers.keys.sorted() }
    static let handlers: [String: JobBody] = [NoopJob.kind: NoopJob.body]

    /// What `adapt worker` is told.
    public struct WorkerRequest: Sendable {
        public var kinds: [String]
        public var leaseMilliseconds: Int64
        /// The lease was given, so it replaces every job's own.
        public var leaseOverridesJobs: Bool
        public var concurrency: Int
        public var exitWhenIdle: Bool
        public var pollMicroseconds: Int
        /// How long one attempt may run (`WorkerOptions.jobTimeoutMilliseconds`); nil: no limit.
        public var jobTimeoutMilliseconds: Int64?

        public init(kinds: [String], leaseMilliseconds: Int64, leaseOverridesJobs: Bool, concurrency: Int, exitWhenIdle: Bool,
                    pollMicroseconds: Int) {
            (self.kinds, self.leaseMilliseconds, self.leaseOverridesJobs, self.concurrency, self.exitWhenIdle, self.pollMicroseconds) =
                (kinds, leaseMilliseconds, leaseOverridesJobs, concurrency, exitWhenIdle, pollMicroseconds)
        }
    }

    /// Claims and runs jobs of `request.kinds` (each in `workerKinds`) until SIGINT/SIGTERM, or idle when asked;
    /// returns the lease owner it used and what it did.
    public func work(_ request: WorkerRequest, log: @escaping @Sendable (String) -> Void) async throws -> (owner: String, summary: WorkerSummary) {
        try await Self.work(request, on: queue, log: log)
    }

    private static func work<Engine: WorkerEngine>(_ request: WorkerRequest, on queue: Engine,
                                                   log: @escaping @Sendable (String) -> Void) async throws -> (owner: String, summary: WorkerSummary) {
        var options = WorkerOptions(
            kinds: request.kinds, leaseMilliseconds: request.leaseMilliseconds, leaseOverridesJobs: request.leaseOverridesJobs,
            concurrency: request.concurrency, exitWhenIdle: request.exitWhenIdle, pollMicroseconds: request.pollMicroseconds,
            log: log)
        options.jobTimeoutMilliseconds = request.jobTimeoutMilliseconds
        // A body deaf to its timeout cannot be stopped from inside the process: the process ends (exit 3), its lease
        // runs out, and the job is rescued for its next attempt (by a supervisor's fresh worker, or any other).
        options.hungBody = { id in
            log("\(id) ignored its timeout; exiting so that a fresh worker takes over")
            exit(3)
        }
        let handlers = Self.handlers
        let worker = Worker(queue: queue, options: options) { claim, context in
            guard let body = handlers[claim.kind] else { return .discard(error: "no handler for kind \(claim.kind)") }
            return try await body(claim, context)
        }
        let signals = worker.stopOnSignals()
        let summary = try await worker.run()
        withExtendedLifetime(signals) {}
        return (options.owner, summary)
    }
}
