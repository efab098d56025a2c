import AdaptCore
import Foundation
import JobQueue

/// Where an idle worker's slots wait on PostgreSQL: one thread listens for the engine's notifications
/// (`PostgresJobQueue.waitForWork`, LISTEN/NOTIFY) while any slot waits, and sleeps on a condition when none does.
///
/// A notification of one of the worker's kinds wakes one waiting slot: the slots share one connection, so waking
/// all of them for one new job would queue their looks one behind the other, the one that finds the job perhaps
/// last. The woken slot claims for its idle siblings too and hands them the jobs (`wakeSibling`), so a backlog
/// fills every slot in one round trip; a write of this process wakes no one, since the database notifies what it
/// makes claimable to this listener as to every other. A failed wait (the server gone) wakes every slot, after a
/// pause, so they meet the error and wait the outage out themselves. The listening thread looks up at least every
/// `sliceMilliseconds`, so a stop or a nearer deadline is noticed soon. The listening connection is the engine's
/// own second connection: waiting holds it.
///
/// `@unchecked Sendable`: `waiters`, `stopped`, `version` and `localVersion` are only touched with `condition`
/// locked.
final class NotificationWaiter: WorkSignal, @unchecked Sendable {
    private let queue: PostgresJobQueue
    private let kinds: [String]
    private let condition = NSCondition()
    private var waiters: [Waiter] = []
    private var stopped = false
    private var version: Int64 = 0
    private var localVersion = 0
    static let sliceMilliseconds: Int64 = 100
    /// After a failed wait, the pause before the next (the slots back off on their own meanwhile).
    static let failurePauseMicroseconds: UInt32 = 100_000

    struct Waiter {
        let seen: WorkSignalMark
        let deadline: Int64?
        let continuation: CheckedContinuation<WorkSignalMark, Never>
    }

    init(queue: PostgresJobQueue, kinds: [String]) {
        self.queue = queue
        self.kinds = kinds
    }

    /// Listens before the first look for work, so no notification sent after that look is missed.
    func start() throws {
        try queue.startListening()
        let thread = Thread { [self] in loop() }
        thread.name = "work-listener"
        thread.start()
    }

    func stop() {
        condition.withLock {
            stopped = true
            condition.broadcast()
        }
    }

    /// Nothing to do: whatever a local write makes claimable (a dependent readied, a job put back or rescued) is
    /// notified by the database like anyone else's, and reaches this process's listener too. Waking a sibling here
    /// would only send it to look for nothing, on the connection the busy slots need.
    func noteLocalWrite() {}

    func wakeSibling() {
        let due = condition.withLock { () -> [Waiter] in
            localVersion += 1
            return waiters.isEmpty ? [] : [waiters.removeFirst()]
        }
        resume(due)
    }

    var idleSlots: Int { condition.withLock { waiters.count } }

    var current: WorkSignalMark { condition.withLock { mark } }

    func wait(since seen: WorkSignalMark, until deadline: Int64?) async -> WorkSignalMark {
        await withCheckedContinuation { continuation in
            let answer = condition.withLock { () -> WorkSignalMark? in
                if stopped || seen != mark { return mark }
                waiters.append(Waiter(seen: seen, deadline: deadline, continuation: continuation))
                condition.broadcast()
                return nil
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }

    private var mark: WorkSignalMark { WorkSignalMark(others: version, local: localVersion) }

    /// Removes and returns the first waiter when `wakeOne`, every waiter when `wakeAll`, and those whose deadline
    /// passed by `now`. Call locked.
    private func takeReady(now: Int64, wakeOne: Bool, wakeAll: Bool) -> [Waiter] {
        var due: [Waiter] = []
        var woken = false
        waiters.removeAll { waiter in
            let ready = wakeAll || (wakeOne && !woken) || waiter.deadline.map { now >= $0 } ?? false
            if ready { due.append(waiter) }
            woken = woken || ready
            return ready
        }
        return due
    }

    private func resume(_ due: [Waiter]) {
        let versions = current
        for waiter in due { waiter.continuation.resume(returning: versions) }
    }

    private func loop() {
        while true {
            condition.lock()
            while waiters.isEmpty && !stopped { condition.wait() }
            if stopped {
                let all = waiters
                waiters.removeAll()
                condition.unlock()
                resume(all)
                return
            }
            let nearest = waiters.compactMap(\.deadline).min()
            condition.unlock()
            let now = queue.clock.nowMilliseconds()
            let timeout = min(Self.sliceMilliseconds, max(0, (nearest ?? .max) - now))
            var notified = false, failed = false
            do {
                notified = try queue.waitForWork(kinds: kinds, timeoutMilliseconds: Int(timeout))
            } catch {
                usleep(Self.failurePauseMicroseconds)
                failed = true
            }
            let due = condition.withLock { () -> [Waiter] in
                if notified || failed { version &+= 1 }
                return takeReady(now: queue.clock.nowMilliseconds(), wakeOne: notified, wakeAll: failed)
            }
            resume(due)
        }
    }
}
