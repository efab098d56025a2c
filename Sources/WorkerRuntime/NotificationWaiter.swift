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
final class NotificationWaiter: WorkSignal, Sendable {
    private let queue: PostgresJobQueue
    private let kinds: [String]
    private let slots = WaitingSlots()
    static let sliceMilliseconds: Int64 = 100
    /// After a failed wait, the pause before the next (the slots back off on their own meanwhile).
    static let failurePauseMicroseconds: UInt32 = 100_000

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

    func stop() { slots.stop() }

    /// Nothing to do: whatever a local write makes claimable (a dependent readied, a job put back or rescued) is
    /// notified by the database like anyone else's, and reaches this process's listener too. Waking a sibling here
    /// would only send it to look for nothing, on the connection the busy slots need.
    func noteLocalWrite() {}

    func wakeSibling() {
        let (due, mark) = slots.condition.withLock { () -> ([WaitingSlots.Waiter], WorkSignalMark) in
            slots.local += 1
            return (slots.waiters.isEmpty ? [] : [slots.waiters.removeFirst()], slots.mark)
        }
        WaitingSlots.resume(due, with: mark)
    }

    var idleSlots: Int { slots.count }

    var current: WorkSignalMark { slots.current }

    func wait(since seen: WorkSignalMark, until deadline: Int64?) async -> WorkSignalMark {
        await slots.wait(since: seen, until: deadline)
    }

    private func loop() {
        while slots.awaitWaiters() {
            let nearest = slots.condition.withLock { slots.waiters.compactMap(\.deadline).min() }
            let now = queue.clock.nowMilliseconds()
            let timeout = min(Self.sliceMilliseconds, max(0, (nearest ?? .max) - now))
            var notified = false, failed = false
            do {
                notified = try queue.waitForWork(kinds: kinds, timeoutMilliseconds: Int(timeout))
            } catch {
                usleep(Self.failurePauseMicroseconds)
                failed = true
            }
            // A notification wakes one slot, a failure every slot; a passed deadline wakes its own.
            let after = queue.clock.nowMilliseconds()
            let (due, mark) = slots.condition.withLock { () -> ([WaitingSlots.Waiter], WorkSignalMark) in
                if notified || failed { slots.others &+= 1 }
                var woken = false
                let due = slots.take { waiter in
                    let ready = failed || (notified && !woken) || waiter.deadline.map { after >= $0 } ?? false
                    woken = woken || ready
                    return ready
                }
                return (due, slots.mark)
            }
            WaitingSlots.resume(due, with: mark)
        }
    }
}
