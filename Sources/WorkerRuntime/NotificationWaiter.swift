import AdaptCore
import Foundation
import JobQueue
import Storage

/// Where an idle worker's slots wait on PostgreSQL: one thread listens for the engine's notifications
/// (`PostgresJobQueue.waitForWork`, LISTEN/NOTIFY) while any slot waits or a handed job may still arrive, and
/// sleeps on a condition otherwise.
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
/// The thread also keeps the worker's offer of its waiting slots up to date (`offerWaitingSlots`), so an enqueue
/// leases its new jobs to them directly; a slot that starts to wait interrupts the thread's wait, so it is
/// offered at once. Each handed job goes to `handOff` and wakes one slot; one that arrives
/// when no slot waits any more (the offer was a moment behind) is released at once, for another worker to claim.
final class NotificationWaiter: WorkSignal, Sendable {
    private let queue: PostgresJobQueue
    private let request: ClaimRequest
    private let handOff: @Sendable (Claim) -> Void
    private let slots: WaitingSlots
    /// Raised when a slot starts to wait, so the listening thread offers it without waiting out its slice.
    private let slotJoined = WakeUpEvent()
    static let sliceMilliseconds: Int64 = 100
    /// After a failed wait, the pause before the next (the slots back off on their own meanwhile).
    static let failurePauseMicroseconds: UInt32 = 100_000

    init(queue: PostgresJobQueue, request: ClaimRequest, handOff: @escaping @Sendable (Claim) -> Void) {
        self.queue = queue
        self.request = request
        self.handOff = handOff
        slots = WaitingSlots(whenASlotStartsWaiting: { [slotJoined] in slotJoined.raise() })
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
        var offer = Offer()
        func updateOffer() {
            let waiting = slots.count
            guard offer.written.map({ $0 - offer.receivedSinceWrite }) != waiting else { return }
            do {
                offer.wrote(waiting, previous: try queue.offerWaitingSlots(waiting, for: request))
            } catch {
                offer = Offer(written: nil)  // the wait meets the same error
            }
        }
        while true {
            updateOffer()
            // The thread sleeps only when no slot waits and no handed job can still arrive: one handed just before
            // the offer was withdrawn must be received, and given back, rather than wait unseen with no heartbeat.
            let quiet = offer.isSettled && slots.count == 0
            guard slots.awaitWaiters(blocking: quiet) else { break }
            if quiet { updateOffer() }
            let nearest = slots.condition.withLock { slots.waiters.compactMap(\.deadline).min() }
            let now = queue.clock.nowMilliseconds()
            let timeout = min(Self.sliceMilliseconds, max(0, (nearest ?? .max) - now))
            var wake = PostgresJobQueue.Wake(), failed = false
            do {
                wake = try queue.waitForWork(kinds: request.kinds, timeoutMilliseconds: Int(timeout), wakeUp: slotJoined)
            } catch {
                usleep(Self.failurePauseMicroseconds)
                failed = true
                offer = Offer(written: nil)
            }
            for claim in wake.handed {
                offer.received()
                take(claim)
            }
            // A notification wakes one slot, a failure every slot; a passed deadline wakes its own.
            let after = queue.clock.nowMilliseconds()
            let (due, mark) = slots.condition.withLock { () -> ([WaitingSlots.Waiter], WorkSignalMark) in
                if wake.notified || failed { slots.others &+= 1 }
                var woken = false
                let due = slots.take { waiter in
                    let ready = failed || (wake.notified && !woken) || waiter.deadline.map { after >= $0 } ?? false
                    woken = woken || ready
                    return ready
                }
                return (due, slots.mark)
            }
            WaitingSlots.resume(due, with: mark)
        }
        // Stopped: no slot takes a job any more. Withdraw the offer, then give back what was handed before that.
        do {
            offer.wrote(0, previous: try queue.offerWaitingSlots(0, for: request))
            let deadline = queue.clock.nowMilliseconds() + 1_000
            while offer.owed > 0 && queue.clock.nowMilliseconds() < deadline {
                for claim in try queue.waitForWork(kinds: request.kinds, timeoutMilliseconds: 50).handed {
                    offer.received()
                    release(claim)
                }
            }
        } catch {
            // The session is gone, and the offer with it; a job handed just before is rescued when its lease ends.
        }
    }

    /// What the database holds on offer for this worker, as the listening thread knows it. Enqueues take slots
    /// without telling it until their claims arrive, in the order they committed.
    struct Offer {
        /// The free slots last written; nil when unknown (nothing written yet by this session, or it broke).
        var written: Int? = 0
        /// Claims received since that write.
        var receivedSinceWrite = 0
        /// Claims handed before that write and not received yet: they arrive first.
        var owed = 0

        var isSettled: Bool { written == 0 && owed == 0 }

        /// `previous` is what the write found: each slot missing from what was written was handed over.
        mutating func wrote(_ slots: Int, previous: Int?) {
            if let written { owed += max(0, written - receivedSinceWrite - (previous ?? 0)) }
            written = slots
            receivedSinceWrite = 0
        }

        mutating func received() {
            if owed > 0 { owed -= 1 } else { receivedSinceWrite += 1 }
        }
    }

    /// Gives a handed job to a waiting slot, or back to the queue when no slot waits.
    private func take(_ claim: Claim) {
        guard slots.count > 0 else { return release(claim) }
        handOff(claim)
        wakeSibling()
    }

    private func release(_ claim: Claim) {
        // A failed release leaves the lease to run out; the job is rescued then.
        _ = try? queue.release(claim, reason: "handed to \(request.owner) when no slot of it was free")
    }
}
