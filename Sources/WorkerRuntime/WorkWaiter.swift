import AdaptCore
import Foundation
import Storage

/// Where an idle worker's slots wait for new work: one thread watches for other processes' commits while any
/// slot waits, and sleeps on a condition when none does.
///
/// `PRAGMA data_version` changes whenever another connection commits (SQLite docs, "PRAGMA data_version"); it
/// reads the WAL index in shared memory, so a look costs microseconds and takes no lock writers wait for.
/// When to look: with inotify (`DirectoryWatch`), a write to the database's folder (a commit writes its frames
/// to the `-wal` file) starts a short window of looks every 200 µs until the commit lands (its WAL index
/// update follows the write and, at durability full, an fsync); otherwise the thread blocks, looking every
/// 10 ms as a fallback. So new work is seen within a fraction of a millisecond and an idle worker costs
/// almost no CPU. Without inotify it looks every `pollMicroseconds` (DESIGN.md: "every millisecond or so").
/// A plain thread keeps the cooperative threads free for job bodies.
///
/// `@unchecked Sendable`: `waiters`, `stopped`, `version` and `localVersion` are only touched with
/// `condition` locked.
final class WorkWaiter: WorkSignal, @unchecked Sendable {
    private let database: Database
    private let clock: any AdaptCore.Clock
    private let pollMicroseconds: UInt32
    private let condition = NSCondition()
    private var waiters: [Waiter] = []
    private var stopped = false
    private var version: Int64 = 0
    private var localVersion = 0
    private let watch: DirectoryWatch?
    /// How long to keep looking quickly after a write to the folder, and how often.
    static let burstNanoseconds: UInt64 = 50_000_000
    static let burstPollMicroseconds: UInt32 = 200
    /// With inotify, a look this often even when nothing is written (a safety net, not the mechanism).
    static let fallbackMicroseconds = 10_000

    struct Waiter {
        let seen: WorkSignalMark
        let deadline: Int64?
        let continuation: CheckedContinuation<WorkSignalMark, Never>
    }

    init(database: Database, clock: any AdaptCore.Clock, pollMicroseconds: Int) {
        self.database = database
        self.clock = clock
        self.pollMicroseconds = UInt32(max(1, pollMicroseconds))
        let folder = (database.path as NSString).deletingLastPathComponent
        watch = DirectoryWatch(directory: folder.isEmpty ? "." : folder)
    }

    func start() throws {
        version = try database.dataVersion()
        let thread = Thread { [self] in loop() }
        thread.name = "work-waiter"
        thread.start()
    }

    /// Ends every wait now and the thread soon after.
    func stop() {
        condition.withLock {
            stopped = true
            condition.broadcast()
        }
    }

    /// Counts a write of this process (sibling slots share one connection, whose own commits do not move
    /// `data_version`), and wakes the slots waiting.
    func noteLocalWrite() {
        condition.withLock {
            localVersion += 1
            // Only a waiting sibling needs waking; the poll thread sleeps on the condition when none waits.
            if !waiters.isEmpty { condition.broadcast() }
        }
    }

    /// The same as any local write here: every waiting slot looks, and one finds what there is.
    func wakeSibling() { noteLocalWrite() }

    var idleSlots: Int { condition.withLock { waiters.count } }

    /// The versions now, to pass to `wait` later.
    var current: WorkSignalMark { condition.withLock { WorkSignalMark(others: version, local: localVersion) } }

    /// Returns once the versions differ from `seen`, `deadline` (clock milliseconds) has passed, or `stop`.
    func wait(since seen: WorkSignalMark, until deadline: Int64?) async -> WorkSignalMark {
        await withCheckedContinuation { continuation in
            let stoppedAlready = condition.withLock {
                if !stopped {
                    waiters.append(Waiter(seen: seen, deadline: deadline, continuation: continuation))
                    condition.broadcast()
                }
                return stopped
            }
            if stoppedAlready { continuation.resume(returning: seen) }
        }
    }

    private func loop() {
        var burstUntil: UInt64 = 0
        while true {
            condition.lock()
            if waiters.isEmpty && !stopped {
                condition.unlock()
                watch?.disarm()
                condition.lock()
            }
            while waiters.isEmpty && !stopped { condition.wait() }
            if stopped {
                let all = waiters
                waiters.removeAll()
                let now = WorkSignalMark(others: version, local: localVersion)
                condition.unlock()
                for waiter in all { waiter.continuation.resume(returning: now) }
                return
            }
            condition.unlock()
            // Watch before reading the version, so a commit lands in one or the other.
            watch?.arm()
            // A failed read (the database busy past its timeout) counts as a change: the slot looks again.
            let observed = (try? database.dataVersion()) ?? -1
            let now = clock.nowMilliseconds()
            condition.lock()
            if observed != -1 { version = observed }
            let versions = WorkSignalMark(others: observed == -1 ? version &+ 1 : version, local: localVersion)
            var due: [Waiter] = []
            waiters.removeAll { waiter in
                let ready = waiter.seen != versions || waiter.deadline.map { now >= $0 } ?? false
                if ready { due.append(waiter) }
                return ready
            }
            let nearest = waiters.compactMap(\.deadline).min()
            let stillWaiting = !waiters.isEmpty
            condition.unlock()
            for waiter in due { waiter.continuation.resume(returning: versions) }
            guard stillWaiting else { continue }
            guard let watch else {
                usleep(pollMicroseconds)
                continue
            }
            if DispatchTime.now().uptimeNanoseconds < burstUntil {
                usleep(min(Self.burstPollMicroseconds, pollMicroseconds))
                continue
            }
            var timeout = Self.fallbackMicroseconds
            if let nearest {
                // A deadline far ahead (a job's run_at) is clamped before the arithmetic, which would overflow.
                let ahead = nearest > now ? min(nearest - now, 86_400_000) : 0
                timeout = min(timeout, Int(ahead) * 1_000)
            }
            if watch.wait(timeoutMicroseconds: timeout) {
                burstUntil = DispatchTime.now().uptimeNanoseconds + Self.burstNanoseconds
            }
        }
    }
}
