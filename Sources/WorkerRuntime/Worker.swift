import AdaptCore
import Foundation
import JobQueue
import Storage

/// How a worker runs.
public struct WorkerOptions: Sendable {
    /// The job kinds it claims.
    public var kinds: [String]
    /// Who holds the leases (shown as `lease_owner`); unique per process.
    public var owner: String
    /// The lease of jobs without one of their own, or of every job with `leaseOverridesJobs`.
    public var leaseMilliseconds: Int64
    public var leaseOverridesJobs: Bool
    /// Jobs run at once in this process.
    public var concurrency: Int
    /// Return once no job of `kinds` is running or due within two minutes (`JobQueue.hasUnfinishedWork`).
    public var exitWhenIdle: Bool
    /// How often an idle worker looks at `PRAGMA data_version` where inotify cannot announce commits
    /// (DESIGN.md: "every millisecond or so"); with inotify it looks when the database folder is written.
    public var pollMicroseconds: Int
    /// Where the worker says what it did (one line per event); nil keeps it quiet.
    public var log: (@Sendable (String) -> Void)?
    /// How long one attempt's body may run (River's job timeout, Temporal's start-to-close) when its job has no
    /// timeout of its own (`Claim.timeoutMilliseconds`, which wins, as a River job's own timeout wins over its
    /// client's); nil: no limit. Past it the body is interrupted as a cancelled run is (its task cancelled,
    /// `JobContext.isCancelled` true) and the attempt is failed as "timed out after N s" (`JobTimeout`), retried by
    /// the job's retry policy.
    public var jobTimeoutMilliseconds: Int64?
    /// How long a timed-out body has to return. Past it the worker stops extending the job's lease, so the lease
    /// runs out and the job is rescued for another attempt, and calls `hungBody` (a worker process ends itself
    /// there, so its supervisor starts a fresh one: a body that ignores cancellation cannot be stopped otherwise).
    public var hungBodyGraceMilliseconds: Int64 = 30_000
    public var hungBody: (@Sendable (JobID) -> Void)?

    public init(kinds: [String], owner: String = WorkerOptions.defaultOwner(), leaseMilliseconds: Int64 = 30_000,
                leaseOverridesJobs: Bool = false, concurrency: Int = 1, exitWhenIdle: Bool = false,
                pollMicroseconds: Int = 1_000, log: (@Sendable (String) -> Void)? = nil) {
        precondition(!kinds.isEmpty && concurrency >= 1 && leaseMilliseconds >= 3, "invalid worker options")
        self.kinds = kinds
        self.owner = owner
        self.leaseMilliseconds = leaseMilliseconds
        self.leaseOverridesJobs = leaseOverridesJobs
        self.concurrency = concurrency
        self.exitWhenIdle = exitWhenIdle
        self.pollMicroseconds = pollMicroseconds
        self.log = log
    }

    var claimRequest: ClaimRequest {
        ClaimRequest(kinds: kinds, owner: owner, leaseMilliseconds: leaseMilliseconds, overridesJobLeases: leaseOverridesJobs)
    }

    /// `host/pid`: unique among the processes sharing a state directory.
    public static func defaultOwner() -> String {
        "\(ProcessInfo.processInfo.hostName)/\(ProcessInfo.processInfo.processIdentifier)"
    }
}

/// What a worker did before it returned.
public struct WorkerSummary: Sendable, Equatable, Encodable {
    public var succeeded = 0
    public var failed = 0
    public var discarded = 0
    public var cancelled = 0
    public var snoozed = 0
    public var released = 0
    /// Jobs whose lease was lost while running; their results were not recorded.
    public var leaseLost = 0
    /// Transactions that recorded successes: fewer than `succeeded` when jobs finishing together shared one.
    public var commits = 0

    enum CodingKeys: String, CodingKey {
        case succeeded, failed, discarded, cancelled, snoozed, released, leaseLost = "lease_lost", commits
    }
}

/// What one turn of the worker loop did (`Worker.runOnce`).
public enum WorkerTurn: Sendable, Equatable {
    /// A job was claimed, its body run, and its end recorded as `outcome`.
    case ran(JobID, JobOutcome)
    /// Nothing was due. `nextWakeAt` (clock milliseconds) is when something will be (a `run_at`, a lease
    /// expiry), if anything is.
    case idle(nextWakeAt: Int64?)
    /// A stop was requested: nothing was claimed.
    case stopping
}

/// How a job's attempt ended, as the worker recorded it.
public enum JobOutcome: Sendable, Equatable {
    case succeeded
    /// Failed with attempts left: claimable again after the backoff.
    case failed
    case discarded
    case cancelled
    case snoozed
    /// Given back unfinished (an immediate stop), the attempt returned.
    case released
    /// The lease was gone before the end was written: nothing was recorded.
    case leaseLost
}

/// The reusable worker loop: claim → run the body with a heartbeat beside it → complete or fail with the token.
///
/// `run` turns it in one task per slot, with a heartbeat thread and an idle wait; `runOnce` turns it once, on
/// the caller's task and the queue's clock alone (`beatDueLeases` sends the heartbeats that clock says are
/// due), so tests drive it step by step on a manual clock.
///
/// Stopping (`requestStop`, or SIGINT/SIGTERM after `stopOnSignals()`): the first request stops claiming and
/// lets running jobs finish; a second releases them at once (back to ready, the attempt given back) and
/// cancels their bodies. Either way no job is lost. Idle, the worker waits in `WorkWaiter` for another
/// process's commit (seen through `PRAGMA data_version`, woken by inotify or by polling), with a timer for the
/// next scheduled `run_at` or lease expiry, so new work starts within a millisecond or so without spinning.
public final class Worker<Engine: WorkerEngine>: Sendable {
    public let queue: Engine
    public let options: WorkerOptions
    private let body: JobBody
    private let monitor: HeartbeatMonitor
    private let waiter: any WorkSignal
    private let commits: GroupCommit<Engine>
    private let outage: OutageBackoff
    private let state: Locked<State>

    struct State {
        var stopRequests = 0
        var summary = WorkerSummary()
        var interrupters: [JobID: Interrupter] = [:]
        /// Jobs one slot claimed for its idle siblings (see `claimOne`), or the engine leased to this worker while
        /// its slots waited (`WorkerEngine.workSignal`), not yet taken by one.
        var handed: [Claim] = []
        /// Jobs asked for by claims under way, so two slots claiming at once do not both claim for the same free
        /// slots.
        var reserved = 0
    }

    public init(queue: Engine, options: WorkerOptions, body: @escaping JobBody) {
        self.queue = queue
        self.options = options
        self.body = body
        outage = OutageBackoff(log: options.log)
        monitor = HeartbeatMonitor(queue: queue, outage: outage, graceMilliseconds: options.hungBodyGraceMilliseconds) { id in
            options.log?("\(id) did not return within \(options.hungBodyGraceMilliseconds) ms of its timeout; its lease is left to expire")
            options.hungBody?(id)
        }
        let state = Locked(State())
        self.state = state
        waiter = queue.workSignal(for: options.claimRequest, pollMicroseconds: options.pollMicroseconds) { claim in
            state.withLock { $0.handed.append(claim) }
        }
        commits = GroupCommit(queue: queue, request: options.claimRequest)
    }

    /// Runs until stopped (or idle, with `exitWhenIdle`); returns what it did.
    public func run() async throws -> WorkerSummary {
        AllocatorTuning.keepFreedMemory()
        monitor.start()
        try waiter.start()
        defer {
            monitor.stop()
            waiter.stop()
        }
        defer { releaseHanded() }
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<options.concurrency {
                group.addTask { try await self.slot() }
            }
            while let interrupted = try await group.next() {
                // A slot whose job was interrupted ends (its task stays cancelled); a fresh one takes its place.
                if interrupted && !isStopping { group.addTask { try await self.slot() } }
            }
        }
        return state.withLock { state in
            state.summary.commits = commits.count
            return state.summary
        }
    }

    /// One turn of the loop: claims at most one job (rescuing expired leases first when nothing is claimable),
    /// runs it, records how it ended, and says what happened. No heartbeat thread runs and nothing waits: time
    /// is the queue's clock, and heartbeats are sent by `beatDueLeases`, from another task while the body runs.
    /// The body runs on the calling task: interrupting it (a cancelled run, a lost lease, an immediate stop)
    /// cancels that task, as it would end a slot of `run`.
    public func runOnce() async throws -> WorkerTurn {
        try await turn(nil, claimNext: false).turn
    }

    /// Sends, now, every heartbeat of a running job that the queue's clock says is due: the heartbeat thread's
    /// work for callers of `runOnce`, which has none.
    public func beatDueLeases() {
        monitor.beatDue()
    }

    /// First call: finish running jobs, claim no more. Second call: release running jobs now.
    public func requestStop() {
        let requests = state.withLock { s -> Int in
            s.stopRequests += 1
            return s.stopRequests
        }
        waiter.stop()
        if requests == 1 {
            options.log?("stopping: running jobs finish first (signal again to release them now)")
        } else if requests == 2 {
            options.log?("stopping now: releasing running jobs")
            for context in monitor.watched { context.markStopNow() }
            let interrupters = state.withLock { Array($0.interrupters.values) }
            for interrupter in interrupters { interrupter.fire() }
        }
    }

    public var isStopping: Bool { state.withLock { $0.stopRequests > 0 } }

    // MARK: The loop

    /// Claims and runs jobs until stopped; returns true when a job's body was interrupted, which leaves this
    /// task cancelled for good.
    private func slot() async throws -> Bool {
        var next: Claim?
        var lookedAlready = false
        var failures = 0
        var lastRescueLook: Int64 = 0
        while !isStopping || next != nil || hasHanded {
            let carried = next
            let skipClaim = lookedAlready
            next = nil
            lookedAlready = false
            do {
                // Expired leases are looked for when idle, and every lease/3 while busy, so a dead worker's
                // job does not wait behind a backlog.
                let now = queue.clock.nowMilliseconds()
                if carried == nil, now - lastRescueLook >= options.leaseMilliseconds / 3 {
                    lastRescueLook = now
                    _ = try rescueExpiredLeases()
                }
                // Read the versions before looking for work, so a commit landing after the look still wakes us.
                let seen = waiter.current
                let step = try await turn(carried, claimNext: true, lookedAlready: skipClaim)
                next = step.next
                switch step.turn {
                case let .ran(_, outcome):
                    if step.interrupted { return true }
                    failures = 0
                    // A success's transaction claimed this slot's next job if one was due (`GroupCommit`): having
                    // found none, the slot need not look again before it waits.
                    lookedAlready = outcome == .succeeded && next == nil
                case .stopping:
                    return false
                case let .idle(nextWakeAt):
                    if options.exitWhenIdle, try !queue.hasUnfinishedWork(kinds: options.kinds) { return false }
                    outage.answered()
                    var deadline = nextWakeAt
                    if options.exitWhenIdle, let look = queue.finishedWorkLookMilliseconds {
                        deadline = min(nextWakeAt ?? .max, queue.clock.nowMilliseconds() + look)
                    }
                    _ = await waiter.wait(since: seen, until: deadline)
                    failures = 0
                }
            } catch where queue.isUnreachable(error) {
                // The server is down or the network cut: wait it out, however long (a claim in hand was already
                // given up by `process`; its lease runs out and another worker rescues it).
                await outage.waitOut(error) { try queue.reconnect() }
            } catch {
                // A database error (busy past its timeout, a full disk): say so and try again with backoff. A job
                // whose result could not be written keeps its lease until it expires, and is then rescued.
                failures += 1
                if failures > 10 { throw error }
                options.log?("database error (\(failures) in a row), retrying: \(error)")
                try? await Task.sleep(for: .milliseconds(min(5_000, 50 << failures)))
            }
        }
        return false
    }

    /// One turn: runs `carried` (claimed by the previous completion) or a job claimed now, and records it.
    /// `next` is the job the completion claimed in the same transaction, when `claimNext` asked for one;
    /// `interrupted` says the body's task was cancelled (see `process`). With `lookedAlready` (the last
    /// completion's claim found nothing) it claims only what the schedule says is due now.
    private func turn(_ carried: Claim?, claimNext: Bool,
                      lookedAlready: Bool = false) async throws -> (turn: WorkerTurn, next: Claim?, interrupted: Bool) {
        let claim: Claim
        if let carried {
            claim = carried
        } else if let handed = takeHanded() {
            // Claimed for this slot by a sibling: taken even when stopping, like a job already running.
            claim = handed
            commits.slotTookJob()
        } else {
            guard !isStopping else { return (.stopping, nil, false) }
            var claimed = lookedAlready ? nil : try claimOne(forSiblings: claimNext)
            var wake: Int64?
            if claimed == nil {
                // One read says both when to look next and whether a lease ran out already (its expiry is a wake
                // time): an idle turn is two round trips on the connection the busy slots share, not three.
                wake = try queue.nextWakeTime(kinds: options.kinds)
                if let wake, wake <= queue.clock.nowMilliseconds(), try rescueExpiredLeases() || lookedAlready {
                    claimed = try claimOne(forSiblings: claimNext)
                }
            }
            guard let claimed else { return (.idle(nextWakeAt: wake), nil, false) }
            claim = claimed
        }
        let outcome: JobOutcome, next: Claim?, interrupted: Bool
        do {
            (outcome, next, interrupted) = try await process(claim, mayClaimNext: claimNext)
        } catch {
            commits.slotIsFree()
            throw error
        }
        if next == nil { commits.slotIsFree() }
        return (.ran(claim.jobID, outcome), next, interrupted)
    }

    /// Claims a due job of the worker's kinds, if there is one, and with `forSiblings`, in the same claim, one for
    /// each other slot that holds no job: those are handed over (`takeHanded`), each waking a waiting sibling, so
    /// a backlog fills every free slot in one round trip instead of one claim after another on the shared
    /// connection.
    private func claimOne(forSiblings: Bool) throws -> Claim? {
        let limit = state.withLock { state -> Int in
            let free = options.concurrency - commits.busySlots - state.handed.count - state.reserved
            let limit = forSiblings ? max(1, free) : 1
            state.reserved += limit
            return limit
        }
        defer { state.withLock { $0.reserved -= limit } }
        let claims = try queue.claimDue(options.claimRequest, limit: limit)
        guard let first = claims.first else { return nil }
        commits.slotTookJob()
        waiter.noteLocalWrite()
        let rest = claims.dropFirst()
        if !rest.isEmpty { state.withLock { $0.handed.append(contentsOf: rest) } }
        for _ in rest { waiter.wakeSibling() }
        // All it asked for: more may be due, for a slot that frees up meanwhile.
        if claims.count == limit { waiter.wakeSibling() }
        return first
    }

    private var hasHanded: Bool { state.withLock { !$0.handed.isEmpty } }

    private func takeHanded() -> Claim? {
        state.withLock { $0.handed.isEmpty ? nil : $0.handed.removeFirst() }
    }

    /// Gives back the jobs claimed for siblings that ended before taking them (an immediate stop, an error), so
    /// they need not wait for their leases to run out.
    private func releaseHanded() {
        let left = state.withLock { state -> [Claim] in
            defer { state.handed.removeAll() }
            return state.handed
        }
        for claim in left {
            do {
                try queue.release(claim, reason: "worker \(options.owner) stopped before starting it")
                count { $0.released += 1 }
            } catch {
                options.log?("could not release \(claim.jobID) (\(error)); its lease will run out and it will be rescued")
            }
        }
    }

    /// Rescues expired leases if there are any (a cheap read first); true when it did.
    private func rescueExpiredLeases() throws -> Bool {
        guard try queue.hasExpiredLeases() else { return false }
        for rescued in try queue.rescueExpiredLeases() {
            options.log?("rescued \(rescued.job) (attempt \(rescued.attempt) lost its lease) → \(rescued.state)")
        }
        waiter.noteLocalWrite()
        return true
    }

    /// Runs one job and records its result; returns how it ended, and the next job when the completion could
    /// claim it in the same transaction.
    ///
    /// The body runs in this slot's own task rather than a new one: a task per job cost a thread hand-off (a
    /// futex wake, and on a busy machine a wait for the scheduler) on every job. To interrupt the body, the
    /// heartbeat or a stop request cancels this task, which then stays cancelled; the slot ends after recording
    /// and `run` starts a fresh one (`interrupted` in the result).
    private func process(_ claim: Claim, mayClaimNext: Bool) async throws -> (JobOutcome, next: Claim?, interrupted: Bool) {
        let context = JobContext(claim: claim, queue: queue)
        options.log?("claimed \(claim.jobID) (\(claim.kind) '\(claim.name)', attempt \(claim.attempt))")
        let interrupter = Interrupter()
        withUnsafeCurrentTask { interrupter.arm($0) }
        state.withLock { $0.interrupters[claim.jobID] = interrupter }
        // Counted from the claim, as a rescue counts it (the job's `updated_at`), so both agree on when it timed out.
        let claimedAt = claim.leaseExpiresAt - claim.leaseMilliseconds
        let deadline = timeout(of: claim).map { claimedAt + $0 }
        monitor.watch(context, deadline: deadline) { interrupter.fire() }
        // A stop request that arrived between the claim and the registration above must still reach this job.
        if state.withLock({ $0.stopRequests >= 2 }) { context.markStopNow(); interrupter.fire() }
        let result: Result<JobResult, Error>
        do { result = .success(try await body(claim, context)) } catch { result = .failure(error) }
        let interrupted = interrupter.disarm()
        monitor.forget(claim.jobID)
        state.withLock { _ = $0.interrupters.removeValue(forKey: claim.jobID) }
        defer { waiter.noteLocalWrite() }
        while true {
            do {
                let (outcome, next) = try await record(result, of: claim, context: context, mayClaimNext: mayClaimNext && !interrupted)
                outage.answered()
                // Work was still due for this slot: an idle sibling may find more.
                if next != nil { waiter.wakeSibling() }
                return (outcome, next, interrupted)
            } catch JobQueueError.leaseLost {
                // The fence's refusal is an answer: an outage met while recording is over.
                outage.answered()
                count { $0.leaseLost += 1 }
                options.log?("lost the lease on \(claim.jobID) (attempt \(claim.attempt)); its result was not recorded")
                return (.leaseLost, nil, interrupted)
            } catch where queue.isUnreachable(error) && state.withLock({ $0.stopRequests < 2 }) {
                // Keep the result and try to record it again once the database answers: the fence refuses it
                // then if the lease ran out meanwhile (another worker may have the job), and it is `leaseLost`.
                await outage.waitOut(error) { try queue.reconnect() }
            }
        }
    }

    /// Turns the body's result into the one fenced write it calls for.
    private func record(_ result: Result<JobResult, Error>, of claim: Claim, context: JobContext,
                        mayClaimNext: Bool) async throws -> (JobOutcome, next: Claim?) {
        let flags = context.snapshot
        if flags.leaseLost { throw JobQueueError.leaseLost(claim.jobID, token: claim.token) }
        if case let .success(.completed(output, hook, afterCommit)) = result {
            // Finished work is recorded even when a stop or a cancellation arrived meanwhile.
            let refusal = Locked<(any Error)?>(nil)
            var fencedHook: (@Sendable (Engine.Connection) throws -> Void)?
            if let hook {
                let engineHook = queue.completionHook(hook)
                fencedHook = { connection in
                    do { try engineHook(connection) } catch {
                        refusal.withLock { $0 = error }
                        throw error
                    }
                }
            }
            let next: Claim?
            do {
                next = try await commits.submit(JobCompletion(
                    claim: claim, output: output, claimNext: mayClaimNext && !isStopping, alsoInTransaction: fencedHook)).get()
            } catch where !queue.isUnreachable(error) {
                // The body's own writes refused the completion (its inputs changed meanwhile): a failed attempt,
                // retried after the backoff, rather than a job left running until its lease runs out.
                guard let reason = refusal.withLock({ $0 }) else { throw error }
                return (try failed(claim, error: "\(reason)", retryable: true, after: nil), nil)
            }
            afterCommit?()
            count { $0.succeeded += 1 }
            options.log?("completed \(claim.jobID)")
            return (.succeeded, next)
        }
        if flags.runCancelled {
            try queue.acknowledgeCancellation(claim, reason: "run cancelled while attempt \(claim.attempt) ran")
            count { $0.cancelled += 1 }
            options.log?("cancelled \(claim.jobID): its run was cancelled")
            return (.cancelled, nil)
        }
        if flags.stopNow {
            try queue.release(claim, reason: "worker \(options.owner) stopped")
            count { $0.released += 1 }
            options.log?("released \(claim.jobID)")
            return (.released, nil)
        }
        if flags.timedOut, let timeout = timeout(of: claim) {
            let error = JobTimeout.error(afterMilliseconds: timeout, jobsOwn: claim.timeoutMilliseconds != nil)
            return (try failed(claim, error: error, retryable: true, after: nil), nil)
        }
        switch result {
        case .success(.completed):
            preconditionFailure("handled above")
        case let .success(.retry(error, after)):
            return (try failed(claim, error: error, retryable: true, after: after), nil)
        case let .success(.discard(error)):
            return (try failed(claim, error: error, retryable: false, after: nil), nil)
        case let .success(.snooze(until)):
            try queue.snooze(claim, until: until)
            count { $0.snoozed += 1 }
            return (.snoozed, nil)
        case let .success(.cancel(reason)):
            try queue.acknowledgeCancellation(claim, reason: reason)
            count { $0.cancelled += 1 }
            return (.cancelled, nil)
        case let .failure(error):
            return (try failed(claim, error: "\(error)", retryable: !(error is CancellationError), after: nil), nil)
        }
    }

    /// How long this attempt may run: the job's own timeout, else the worker's.
    private func timeout(of claim: Claim) -> Int64? {
        claim.timeoutMilliseconds ?? options.jobTimeoutMilliseconds
    }

    private func failed(_ claim: Claim, error: String, retryable: Bool, after: Int64?) throws -> JobOutcome {
        let state = try queue.fail(claim, error: error, retryable: retryable, retryAfter: after)
        let outcome: JobOutcome = state == .discarded ? .discarded : state == .cancelled ? .cancelled : .failed
        count { outcome == .discarded ? ($0.discarded += 1) : outcome == .cancelled ? ($0.cancelled += 1) : ($0.failed += 1) }
        options.log?("\(claim.jobID) attempt \(claim.attempt) failed → \(state)")
        return outcome
    }

    private func count(_ change: (inout WorkerSummary) -> Void) {
        state.withLock { change(&$0.summary) }
    }
}

/// Cancels the task running a job body, from another thread, only while that body runs.
///
/// `@unchecked Sendable`: `task` is used only with `lock` held and only between `arm` and `disarm`, while the
/// task it names is alive (it is the task that armed it, suspended in or running the body).
final class Interrupter: @unchecked Sendable {
    private let lock = NSLock()
    private var task: UnsafeCurrentTask?
    private var fired = false

    func arm(_ task: UnsafeCurrentTask?) { lock.withLock { self.task = task } }

    func fire() {
        lock.withLock {
            fired = true
            task?.cancel()
        }
    }

    /// Forgets the task; true when it was interrupted.
    func disarm() -> Bool {
        lock.withLock {
            task = nil
            return fired
        }
    }
}
