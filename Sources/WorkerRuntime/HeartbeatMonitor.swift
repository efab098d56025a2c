import Foundation
import JobQueue

/// Extends the leases of a worker's running jobs, each every third of its own lease, from one dedicated thread.
///
/// A thread rather than a task: a job body may keep every cooperative thread busy with computation (the
/// train step does), and a missed heartbeat would lose the lease. When a heartbeat finds the run cancelled
/// or the lease lost, or the attempt past its deadline (the worker's job timeout), the monitor flags the job's
/// context and calls its `interrupt` (which cancels the body). A timed-out body that has not returned after the
/// grace period gets no more heartbeats: its lease runs out and the job is rescued.
///
/// A heartbeat that finds the database unreachable (a server restarting, a cut link) is not left to the next
/// interval on a broken connection: the monitor says so through the worker's `OutageBackoff`, shared with its
/// slots, and tries again after the backoff's delay (never later than the interval), reopening the connection
/// first. A job whose body does not touch the database then keeps its lease through an outage shorter than the
/// lease, instead of losing it because only the body's result would have reconnected. Reopening goes through
/// the connection's own lock, so it waits for a statement or transaction another thread has under way.
///
/// `@unchecked Sendable`: `entries` and `stopped` are only touched with `condition` locked.
final class HeartbeatMonitor: @unchecked Sendable {
    private let queue: any WorkerEngine
    private let outage: OutageBackoff
    private let condition = NSCondition()
    private var entries: [JobID: Entry] = [:]
    private var stopped = false
    private var thread: Thread?
    /// When the thread will look next on its own; `watch` wakes it only for an earlier due time (a wake per
    /// job would cost a context switch on every claim).
    private var wakeAt: Int64 = .max

    struct Entry {
        let context: JobContext
        let interrupt: @Sendable () -> Void
        var due: Int64
        /// When the attempt times out (`WorkerOptions.jobTimeoutMilliseconds`), nil without a timeout.
        let deadline: Int64?

        /// The next time the monitor must look at this job: its heartbeat, its deadline, or the end of the grace
        /// a timed-out body has to return.
        func nextLook(grace: Int64) -> Int64 {
            guard let deadline else { return due }
            return min(due, context.isTimedOut ? deadline + grace : deadline)
        }
    }

    /// How long a timed-out body has to return before its lease is left to expire.
    private let graceMilliseconds: Int64
    private let hungBody: @Sendable (JobID) -> Void

    init(queue: any WorkerEngine, outage: OutageBackoff, graceMilliseconds: Int64 = 30_000,
         hungBody: @escaping @Sendable (JobID) -> Void = { _ in }) {
        self.queue = queue
        self.outage = outage
        self.graceMilliseconds = graceMilliseconds
        self.hungBody = hungBody
    }

    static func interval(_ claim: Claim) -> Int64 { max(1, claim.leaseMilliseconds / 3) }

    func start() {
        let thread = Thread { [self] in loop() }
        thread.name = "heartbeat"
        self.thread = thread
        thread.start()
    }

    func stop() {
        condition.withLock {
            stopped = true
            condition.broadcast()
        }
    }

    func watch(_ context: JobContext, deadline: Int64? = nil, interrupt: @escaping @Sendable () -> Void) {
        condition.withLock {
            let due = queue.clock.nowMilliseconds() + Self.interval(context.claim)
            let entry = Entry(context: context, interrupt: interrupt, due: due, deadline: deadline)
            entries[context.claim.jobID] = entry
            if entry.nextLook(grace: graceMilliseconds) < wakeAt { condition.broadcast() }
        }
    }

    func forget(_ id: JobID) {
        condition.withLock { _ = entries.removeValue(forKey: id) }
    }

    /// The contexts being watched now (to release them all on an immediate stop).
    var watched: [JobContext] { condition.withLock { entries.values.map(\.context) } }

    /// Sends every heartbeat due by the clock now, on the calling thread (`Worker.beatDueLeases`, for a worker
    /// turned by `runOnce`, which starts no thread).
    func beatDue() {
        let due = condition.withLock { takeDue(now: queue.clock.nowMilliseconds()) }
        beat(due)
    }

    /// The entries due at `now`, each rescheduled a third of its lease later. Call with `condition` locked.
    private func takeDue(now: Int64) -> [Entry] {
        let due = entries.values.filter { $0.nextLook(grace: graceMilliseconds) <= now }
        for entry in due where entry.due <= now {
            entries[entry.context.claim.jobID]?.due = now + Self.interval(entry.context.claim)
        }
        return due
    }

    private func loop() {
        while true {
            var due: [Entry] = []
            condition.lock()
            while !stopped {
                let now = queue.clock.nowMilliseconds()
                due = takeDue(now: now)
                if !due.isEmpty { break }
                let next = entries.values.map { $0.nextLook(grace: graceMilliseconds) }.min()
                // Real time: the clock may be a test's manual clock, so never wait long without a look.
                let wait = next.map { min(max($0 - now, 1), 1_000) } ?? 1_000
                wakeAt = now + wait
                _ = condition.wait(until: Date(timeIntervalSinceNow: Double(wait) / 1000))
                wakeAt = .max
            }
            if stopped { condition.unlock(); return }
            condition.unlock()
            beat(due)
        }
    }

    /// Sends the heartbeats of `due` one after another. The first to find the database unreachable ends the
    /// round: the others would meet the same broken connection, so it and the rest are due again after the
    /// outage backoff's next delay.
    private func beat(_ due: [Entry]) {
        for (index, entry) in due.enumerated() {
            do {
                // A no-op on a connection that works; after a failure, the reconnect the next round needs.
                try queue.reconnect()
                try beat(entry)
                outage.answered()
            } catch where queue.isUnreachable(error) {
                retry(due[index...], afterMilliseconds: Int64(outage.nextDelayMilliseconds(after: error)))
                return
            } catch {
                // A busy or failing database: try again at the next interval; the lease covers two more misses.
            }
        }
    }

    /// Makes `entries` due again `delay` from now, or at their interval if that comes first.
    private func retry(_ entries: ArraySlice<Entry>, afterMilliseconds delay: Int64) {
        condition.withLock {
            let now = queue.clock.nowMilliseconds()
            for entry in entries {
                let id = entry.context.claim.jobID
                self.entries[id]?.due = now + min(delay, Self.interval(entry.context.claim))
            }
        }
    }

    /// One heartbeat; throws only what `beat(_:)` must tell apart (the database unreachable, or another error).
    private func beat(_ entry: Entry) throws {
        if let deadline = entry.deadline {
            let now = queue.clock.nowMilliseconds()
            if now >= deadline, !entry.context.isTimedOut {
                entry.context.markTimedOut()
                entry.interrupt()
            }
            if entry.context.isTimedOut, now >= deadline + graceMilliseconds {
                // The body ignored its interruption: no more heartbeats, so the lease runs out and the job is
                // rescued for its next attempt.
                forget(entry.context.claim.jobID)
                hungBody(entry.context.claim.jobID)
                return
            }
        }
        do {
            switch try queue.heartbeat(entry.context.claim, leaseMilliseconds: entry.context.claim.leaseMilliseconds) {
            case .extended: break
            case .cancelled:
                if !entry.context.isRunCancelled {
                    entry.context.markRunCancelled()
                    entry.interrupt()
                }
            }
        } catch JobQueueError.leaseLost {
            entry.context.markLeaseLost()
            forget(entry.context.claim.jobID)
            entry.interrupt()
        }
    }
}
