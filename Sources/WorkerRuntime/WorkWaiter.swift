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
final class WorkWaiter: WorkSignal, Sendable {
    private let database: Database
    private let clock: any AdaptCore.Clock
    private let pollMicroseconds: UInt32
    private let slots = WaitingSlots()
    private let watch: DirectoryWatch?
    /// How long to keep looking quickly after a write to the folder, and how often.
    static let burstNanoseconds: UInt64 = 50_000_000
    static let burstPollMicroseconds: UInt32 = 200
    /// With inotify, a look this often even when nothing is written (a safety net, not the mechanism).
    static let fallbackMicroseconds = 10_000

    init(database: Database, clock: any AdaptCore.Clock, pollMicroseconds: Int) {
        self.database = database
        self.clock = clock
        self.pollMicroseconds = UInt32(max(1, pollMicroseconds))
        let folder = (database.path as NSString).deletingLastPathComponent
        watch = DirectoryWatch(directory: folder.isEmpty ? "." : folder)
    }

    func start() throws {
        let version = try database.dataVersion()
        slots.condition.withLock { slots.others = version }
        let thread = Thread { [self] in loop() }
        thread.name = "work-waiter"
        thread.start()
    }

    /// Ends every wait now and the thread soon after.
    func stop() { slots.stop() }

    /// Counts a write of this process (sibling slots share one connection, whose own commits do not move
    /// `data_version`), and wakes the slots waiting.
    func noteLocalWrite() {
        slots.condition.withLock {
            slots.local += 1
            // Only a waiting sibling needs waking; the poll thread sleeps on the condition when none waits.
            if !slots.waiters.isEmpty { slots.condition.broadcast() }
        }
    }

    /// The same as any local write here: every waiting slot looks, and one finds what there is.
    func wakeSibling() { noteLocalWrite() }

    var idleSlots: Int { slots.count }

    /// The versions now, to pass to `wait` later.
    var current: WorkSignalMark { slots.current }

    /// Returns once the versions differ from `seen`, `deadline` (clock milliseconds) has passed, or `stop`.
    func wait(since seen: WorkSignalMark, until deadline: Int64?) async -> WorkSignalMark {
        await slots.wait(since: seen, until: deadline)
    }

    private func loop() {
        var burstUntil: UInt64 = 0
        while true {
            let idle = slots.condition.withLock { slots.waiters.isEmpty && !slots.stopped }
            if idle { watch?.disarm() }
            guard slots.awaitWaiters() else { return }
            // Watch before reading the version, so a commit lands in one or the other.
            watch?.arm()
            // A failed read (the database busy past its timeout) counts as a change: the slot looks again.
            let observed = (try? database.dataVersion()) ?? -1
            let now = clock.nowMilliseconds()
            let (due, versions, nearest, stillWaiting) = slots.condition.withLock {
                () -> ([WaitingSlots.Waiter], WorkSignalMark, Int64?, Bool) in
                if observed != -1 { slots.others = observed }
                var versions = slots.mark
                if observed == -1 { versions.others &+= 1 }
                let due = slots.take { $0.seen != versions || $0.deadline.map { now >= $0 } ?? false }
                return (due, versions, slots.waiters.compactMap(\.deadline).min(), !slots.waiters.isEmpty)
            }
            WaitingSlots.resume(due, with: versions)
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
