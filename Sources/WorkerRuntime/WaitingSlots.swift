import Foundation

/// A worker's idle slots waiting for work, and the mark they compare: what `WorkWaiter` (SQLite) and
/// `NotificationWaiter` (PostgreSQL) share. Each of them runs a thread that learns of other processes' commits in
/// its backend's way, moves `others`, and resumes the slots that should look again.
///
/// `@unchecked Sendable`: `waiters`, `stopped`, `others` and `local` are only touched with `condition` locked.
final class WaitingSlots: @unchecked Sendable {
    struct Waiter {
        let seen: WorkSignalMark
        let deadline: Int64?
        let continuation: CheckedContinuation<WorkSignalMark, Never>
    }

    let condition = NSCondition()
    var waiters: [Waiter] = []
    var stopped = false
    /// Other processes' commits as the wake source counts them.
    var others: Int64 = 0
    /// This process's writes and hand-overs (`WorkSignal.noteLocalWrite`, `wakeSibling`).
    var local = 0

    /// Called, unlocked, each time a slot starts to wait.
    private let joined: @Sendable () -> Void

    init(whenASlotStartsWaiting joined: @escaping @Sendable () -> Void = {}) {
        self.joined = joined
    }

    /// Call locked.
    var mark: WorkSignalMark { WorkSignalMark(others: others, local: local) }

    var current: WorkSignalMark { condition.withLock { mark } }

    var count: Int { condition.withLock { waiters.count } }

    /// Returns at once when stopped or when the mark moved since `seen`; otherwise once the wake source resumes it.
    /// Registering wakes the source's thread, which sleeps on `condition` while no slot waits.
    func wait(since seen: WorkSignalMark, until deadline: Int64?) async -> WorkSignalMark {
        await withCheckedContinuation { continuation in
            let answer = condition.withLock { () -> WorkSignalMark? in
                if stopped || seen != mark { return mark }
                waiters.append(Waiter(seen: seen, deadline: deadline, continuation: continuation))
                condition.broadcast()
                return nil
            }
            if let answer { continuation.resume(returning: answer) } else { joined() }
        }
    }

    /// Ends every wait now (the source's thread resumes the waiters and returns).
    func stop() {
        condition.withLock {
            stopped = true
            condition.broadcast()
        }
    }

    /// Removes and returns the waiters `ready` picks, in order. Call locked.
    func take(_ ready: (Waiter) -> Bool) -> [Waiter] {
        var due: [Waiter] = []
        waiters.removeAll { waiter in
            guard ready(waiter) else { return false }
            due.append(waiter)
            return true
        }
        return due
    }

    /// Blocks the source's thread while no slot waits (unless `blocking` is false); when stopped, resumes every
    /// waiter and returns false.
    func awaitWaiters(blocking: Bool = true) -> Bool {
        condition.lock()
        while blocking && waiters.isEmpty && !stopped { condition.wait() }
        guard !stopped else {
            let all = waiters
            waiters.removeAll()
            let now = mark
            condition.unlock()
            for waiter in all { waiter.continuation.resume(returning: now) }
            return false
        }
        condition.unlock()
        return true
    }

    static func resume(_ due: [Waiter], with mark: WorkSignalMark) {
        for waiter in due { waiter.continuation.resume(returning: mark) }
    }
}
