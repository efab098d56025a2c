import AdaptCore
import Storage

/// The job engine's contract, whatever database holds it: `JobQueue` on the state directory's SQLite file and
/// `PostgresJobQueue` on a PostgreSQL server keep the same runs, jobs, leases, fencing tokens, retries, events
/// and cancellation, and one conformance suite runs against both.
///
/// `Connection` is what a completion hook writes through, inside the completion's transaction: the backend's
/// own connection (`Database` or `PostgresConnection`), since the hook's SQL is the backend's dialect.
public protocol JobEngine: AnyObject, Sendable {
    associatedtype Connection

    var clock: any Clock { get }
    var retryPolicy: RetryPolicy { get }

    // Runs
    @discardableResult
    func enqueue(_ description: RunDescription) throws -> EnqueueResult
    @discardableResult
    func cancel(run: RunID) throws -> JobQueue.CancelOutcome
    @discardableResult
    func retry(job id: JobID) throws -> JobQueue.RetryOutcome
    @discardableResult
    func rescueExpiredLeases() throws -> [JobQueue.Rescued]
    @discardableResult
    func releaseLeases(heldBy owner: String, cause: String) throws -> [JobQueue.Rescued]
    @discardableResult
    func pruneHistory(olderThanMilliseconds age: Int64) throws -> JobQueue.PruneOutcome

    // Leases
    func claim(_ request: ClaimRequest) throws -> Claim?
    /// Up to `limit` due jobs in one claim (for a worker with that many idle slots).
    func claim(_ request: ClaimRequest, limit: Int) throws -> [Claim]
    func claim(kinds: [String], owner: String, leaseMilliseconds: Int64) throws -> Claim?
    func heartbeat(_ claim: Claim, leaseMilliseconds: Int64) throws -> HeartbeatResult
    func complete(_ claim: Claim, output: JSONValue) throws
    func complete(_ claim: Claim, output: JSONValue, alsoInTransaction: ((Connection) throws -> Void)?) throws
    func complete(_ claim: Claim, output: JSONValue, alsoInTransaction: (@Sendable (Connection) throws -> Void)?,
                  thenClaim next: ClaimRequest) throws -> Claim?
    /// Group commit: every completion of `batch` and a next claim for each that asks, in one transaction; per
    /// completion, its next claim or why it was not recorded (see `JobQueue.complete(_:thenClaim:)`).
    func complete(_ batch: [JobCompletion<Connection>], thenClaim next: ClaimRequest) throws -> [Result<Claim?, any Error>]
    @discardableResult
    func fail(_ claim: Claim, error: String, retryable: Bool, retryAfter: Int64?) throws -> JobState
    func release(_ claim: Claim, reason: String) throws
    func snooze(_ claim: Claim, until: Int64) throws
    func acknowledgeCancellation(_ claim: Claim, reason: String) throws
    func progress(_ claim: Claim, message: String) throws
    func recordCheckpointPointer(_ claim: Claim, _ pointer: JSONValue) throws
    func checkpointPointer(job: JobID) throws -> JSONValue?

    // Reads
    func runs(limit: Int) throws -> [RunRecord]
    func run(_ id: RunID) throws -> RunRecord
    func runExists(_ id: RunID) throws -> Bool
    func jobExists(_ id: JobID) throws -> Bool
    func jobs(matching filter: JobQueue.JobFilter) throws -> [JobRecord]
    func job(_ id: JobID) throws -> JobRecord
    func parents(of id: JobID) throws -> [JobID]
    func events(run: RunID?, job: JobID?, afterID: Int64, limit: Int) throws -> [EventRecord]
    /// At most `limit` events after `cursor` that no transaction still in progress can add to, in id order: a
    /// follower that keeps the returned cursor sees every event exactly once.
    func tail(run: RunID?, job: JobID?, after cursor: EventCursor, limit: Int) throws -> EventPage
    /// Every event after `cursor` visible now, committed or not yet settled: for a follower that stops (its run
    /// finished, so all of the run's own events have committed) and will not read again.
    func remainingEvents(run: RunID?, job: JobID?, after cursor: EventCursor) throws -> [EventRecord]
    func hasClaimableWork(kinds: [String]) throws -> Bool
    func hasUnfinishedWork(kinds: [String]) throws -> Bool
    func hasExpiredLeases() throws -> Bool
    func nextWakeTime(kinds: [String]) throws -> Int64?
    func outlook(kinds: [String], horizonMilliseconds: Int64) throws -> JobQueue.WorkOutlook
}

extension JobQueue: JobEngine {
    public typealias Connection = Database

    /// Records success with no hook (the `JobEngine` form of `complete(_:output:alsoInTransaction:)`).
    public func complete(_ claim: Claim, output: JSONValue) throws {
        try complete(claim, output: output, alsoInTransaction: nil)
    }
}
