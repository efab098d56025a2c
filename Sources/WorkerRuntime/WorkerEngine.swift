import JobQueue
import Storage

/// What a `Worker` needs of a job engine beyond `JobEngine`: how an idle slot learns of new work, how a body's
/// completion hook reaches the engine's connection, and how an unreachable database is told apart from other
/// errors and reconnected to. `JobQueue` (SQLite) and `PostgresJobQueue` conform.
public protocol WorkerEngine: JobEngine {
    /// Where idle slots of a worker claiming with `request` wait for work. An engine that leases new jobs to
    /// waiting workers itself gives each such claim to `handOff` and wakes a slot to take it.
    func workSignal(for request: ClaimRequest, pollMicroseconds: Int,
                    handOff: @escaping @Sendable (Claim) -> Void) -> any WorkSignal
    /// Claims up to `limit` due jobs for a slot that found itself idle (and the idle siblings it hands them to);
    /// none when nothing is due.
    func claimDue(_ request: ClaimRequest, limit: Int) throws -> [Claim]
    /// A body's completion hook (`JobResult.completed`) as this engine runs it inside the completion's transaction,
    /// on the engine's own connection.
    func completionHook(_ hook: @escaping @Sendable (any SQLConnection) throws -> Void) -> @Sendable (Connection) throws -> Void
    /// True when `error` says the database cannot be reached now (worth waiting out), not that a statement failed.
    func isUnreachable(_ error: any Error) -> Bool
    /// Opens the broken connections again; throws while the database is still unreachable.
    func reconnect() throws
    /// How long an idle worker that exits when idle waits at most before it looks again whether the jobs still
    /// running elsewhere have finished; nil when every commit wakes it anyway.
    var finishedWorkLookMilliseconds: Int64? { get }
}

/// Where a worker's idle slots wait: `current` is read before looking for work, and `wait(since:until:)` returns
/// once something may have changed since (another process committed, a sibling slot wrote) or `deadline` passed.
public protocol WorkSignal: Sendable {
    func start() throws
    /// Ends every wait now.
    func stop()
    /// A write of this process that may have made work (a claim, a completion readying dependents, a job put
    /// back); wakes waiting slots where the database would not announce it to them anyway.
    func noteLocalWrite()
    /// Moves the mark and wakes one waiting slot: a claim was left for it (`Worker`'s hand-over), or a claim took
    /// all it asked for and more may be due.
    func wakeSibling()
    /// How many slots wait now.
    var idleSlots: Int { get }
    var current: WorkSignalMark { get }
    func wait(since seen: WorkSignalMark, until deadline: Int64?) async -> WorkSignalMark
}

/// What a slot saw of the database's changes (others' commits, this process's writes) before it looked for work.
public struct WorkSignalMark: Sendable, Equatable {
    public var others: Int64
    public var local: Int
}

extension JobQueue: WorkerEngine {
    public func workSignal(for request: ClaimRequest, pollMicroseconds: Int,
                           handOff: @escaping @Sendable (Claim) -> Void) -> any WorkSignal {
        WorkWaiter(database: database, clock: clock, pollMicroseconds: pollMicroseconds)
    }

    /// A read first: an empty claim would still take SQLite's write lock.
    public func claimDue(_ request: ClaimRequest, limit: Int) throws -> [Claim] {
        guard try hasClaimableWork(kinds: request.kinds) else { return [] }
        return try claim(request, limit: limit)
    }

    public func completionHook(_ hook: @escaping @Sendable (any SQLConnection) throws -> Void) -> @Sendable (Database) throws -> Void {
        { try hook($0) }
    }

    /// A local file is always there: busy or full is an error of the moment, handled as before.
    public func isUnreachable(_ error: any Error) -> Bool { false }

    public func reconnect() throws {}

    /// Every commit moves `PRAGMA data_version`, which wakes the idle slots.
    public var finishedWorkLookMilliseconds: Int64? { nil }
}

extension PostgresJobQueue: WorkerEngine {
    public func workSignal(for request: ClaimRequest, pollMicroseconds: Int,
                           handOff: @escaping @Sendable (Claim) -> Void) -> any WorkSignal {
        NotificationWaiter(queue: self, request: request, handOff: handOff)
    }

    /// The claim is its own look: one that finds nothing locks no row and commits nothing, so a read before it
    /// would only add a round trip to the wake.
    public func claimDue(_ request: ClaimRequest, limit: Int) throws -> [Claim] {
        try claim(request, limit: limit)
    }

    public func completionHook(_ hook: @escaping @Sendable (any SQLConnection) throws -> Void) -> @Sendable (PostgresConnection) throws -> Void {
        { try hook($0) }
    }

    public func isUnreachable(_ error: any Error) -> Bool {
        connection.isOutage(error)
    }

    public func reconnect() throws {
        try connection.reconnectIfBroken()
    }

    /// Only jobs becoming claimable are notified, not jobs finishing: without a look now and then, a worker told to
    /// exit when idle would wait for the next lease expiry after the last job elsewhere finished.
    public var finishedWorkLookMilliseconds: Int64? { 50 }
}
