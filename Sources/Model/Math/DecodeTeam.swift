import AdaptCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The threads that share single-token decoding's work (its matrix–vector products and attention heads), kept
/// for the life of the process.
///
/// A decoded token is about 150 hand-offs of 5–100 µs of work each, too short to wake a sleeping thread for,
/// and a generation can last minutes, too long for `WorkerTeam`'s always-spinning members. So a member polls
/// for the next hand-off: on the counter alone for `pollNanoseconds` (the gaps between the hand-offs of one
/// token are shorter; a hand-off is then seen within a cache line's transfer, where a `sched_yield` costs a
/// system call), then yielding the core on each turn (on a busy machine, polling longer takes the time the
/// caller's own work needs) until `spinNanoseconds` have passed since its last task, and then it sleeps on a
/// condition variable, so an idle process costs no CPU.
///
/// Tasks: member m first works through its home share of the task list (`WorkerTeam.piece`), claiming tasks
/// from a cursor of its own, so on a quiet machine no claim crosses cores; then it takes what is left of the
/// other shares, so a member the machine delays holds up only the task it is on. Every task writes its own
/// outputs, so which member ran it does not change a bit.
///
/// The caller returns once every task is finished, without waiting for the members to notice: a member the
/// machine has not run since the hand-off only finds nothing left when it does. The next hand-off waits for
/// the members to have let go of the last one (their `pending` count) for `catchUpNanoseconds` at most, and
/// else runs on the caller alone.
///
/// `@unchecked Sendable`: `body` and `tasks` are written by the caller only while no member works (pending is
/// zero) and before it publishes a new generation (sequentially consistent), and read by members only after
/// they observed it and claimed a task of it; the counters are atomics, each on its own cache lines.
final class DecodeTeam: @unchecked Sendable {
    let count: Int
    private let counters: CacheLineCounters
    private let sleepers = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    private var tasks = 0
    private var body: ((Int) -> Void)? = nil
    private var threads: [pthread_t] = []
    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    static let pollNanoseconds: UInt64 = 10_000
    static let spinNanoseconds: UInt64 = 5_000_000
    static let catchUpNanoseconds: UInt64 = 5_000

    // Counter slots: the generation members wait on, members still in the current generation, tasks finished
    // in it, then one cursor per member (the next task of its home share).
    private static let generationSlot = 0, pendingSlot = 1, finishedSlot = 2, firstCursorSlot = 3
    private var generation: UnsafeMutablePointer<Atomic<Int>> { counters[Self.generationSlot] }
    private var pending: UnsafeMutablePointer<Atomic<Int>> { counters[Self.pendingSlot] }
    private var finished: UnsafeMutablePointer<Atomic<Int>> { counters[Self.finishedSlot] }
    private func cursor(_ member: Int) -> UnsafeMutablePointer<Atomic<Int>> { counters[Self.firstCursorSlot + member] }

    /// A team of `count` members, the caller being one; nil when the system refuses a thread (the caller then
    /// computes alone: the results are the same).
    init?(count: Int) {
        self.count = count
        counters = CacheLineCounters(Self.firstCursorSlot + max(1, count))
        pthread_mutex_init(lock, nil)
        pthread_cond_init(wake, nil)
        for member in 1..<max(1, count) {
            let start = Unmanaged.passRetained(Start(team: self, member: member))
            var thread = pthread_t()
            let status = pthread_create(&thread, nil, { raw in
                let start = Unmanaged<Start>.fromOpaque(raw!).takeRetainedValue()
                start.team.serve(member: start.member)
                return nil
            }, start.toOpaque())
            guard status == 0 else {
                start.release()
                stop()
                return nil
            }
            threads.append(thread)
        }
    }

    private final class Start {
        let team: DecodeTeam
        let member: Int
        init(team: DecodeTeam, member: Int) { self.team = team; self.member = member }
    }

    deinit {
        pthread_cond_destroy(wake)
        pthread_mutex_destroy(lock)
        lock.deallocate()
        wake.deallocate()
    }

    /// The process's team, made or remade for `count` members when first asked for that size.
    private static let shared = Locked<DecodeTeam?>(nil)

    /// Runs `body(task)` for every task in 0..<tasks on the shared team of `count` members; on the caller alone
    /// when another caller holds the team (concurrent decoders), a member is still behind, or threads cannot be had.
    static func forEachTask(_ tasks: Int, members count: Int, _ body: (Int) -> Void) {
        if count <= 1 || tasks <= 1 {
            for task in 0..<tasks { body(task) }
            return
        }
        let ran = shared.withLockIfAvailable { team -> Bool in
            if team?.count != count {
                team?.stop()
                team = DecodeTeam(count: count)
            }
            guard let team else { return false }
            return team.run(tasks, body)
        }
        if ran != true {
            for task in 0..<tasks { body(task) }
        }
    }

    /// Runs the tasks on the team; false, having run none, when a member has not let go of the last hand-off.
    private func run(_ tasks: Int, _ body: (Int) -> Void) -> Bool {
        guard Self.poll(for: Self.catchUpNanoseconds, until: { pending.pointee.load(ordering: .acquiring) == 0 }) else { return false }
        withoutActuallyEscaping(body) { body in
            self.body = body
            self.tasks = tasks
            for member in 0..<count { cursor(member).pointee.store(WorkerTeam.piece(tasks, member, of: count).lowerBound, ordering: .relaxed) }
            finished.pointee.store(0, ordering: .relaxed)
            pending.pointee.store(threads.count, ordering: .relaxed)
            generation.pointee.wrappingAdd(1, ordering: .sequentiallyConsistent)
            if sleepers.load(ordering: .sequentiallyConsistent) > 0 {
                pthread_mutex_lock(lock)
                pthread_cond_broadcast(wake)
                pthread_mutex_unlock(lock)
            }
            finished.pointee.wrappingAdd(work(member: 0), ordering: .releasing)
            // The other members' last tasks: on a quiet machine a few microseconds; yield to one that was preempted.
            if !Self.poll(for: Self.pollNanoseconds, until: { finished.pointee.load(ordering: .acquiring) == tasks }) {
                while finished.pointee.load(ordering: .acquiring) != tasks { sched_yield() }
            }
            self.body = nil
        }
        return true
    }

    /// Claims and runs tasks, its own share first; returns how many it ran.
    private func work(member: Int) -> Int {
        var ran = 0
        var job: ((Int) -> Void)? = nil
        for offset in 0..<count {
            let home = (member + offset) % count
            let end = WorkerTeam.piece(tasks, home, of: count).upperBound
            while true {
                let task = cursor(home).pointee.wrappingAdd(1, ordering: .relaxed).oldValue
                if task >= end { break }
                // Read only after a claim succeeded: the caller is then still inside `run`.
                if job == nil { job = body }
                job!(task)
                ran += 1
            }
        }
        return ran
    }

    private func serve(member: Int) {
        // Generation 0 is the one the team was made in: a member whose thread starts only after the first run
        // was published must still see that run as new.
        var seen = 0
        while true {
            if !Self.poll(for: Self.pollNanoseconds, until: { generation.pointee.load(ordering: .acquiring) != seen }) {
                let start = Self.nanoseconds()
                while generation.pointee.load(ordering: .acquiring) == seen {
                    if Self.nanoseconds() - start < Self.spinNanoseconds {
                        sched_yield()
                        continue
                    }
                    pthread_mutex_lock(lock)
                    sleepers.wrappingAdd(1, ordering: .sequentiallyConsistent)
                    while generation.pointee.load(ordering: .sequentiallyConsistent) == seen { pthread_cond_wait(wake, lock) }
                    sleepers.wrappingSubtract(1, ordering: .sequentiallyConsistent)
                    pthread_mutex_unlock(lock)
                }
            }
            seen = generation.pointee.load(ordering: .acquiring)
            if stopping.load(ordering: .acquiring) { return }
            finished.pointee.wrappingAdd(work(member: member), ordering: .releasing)
            pending.pointee.wrappingSubtract(1, ordering: .releasing)
        }
    }

    /// Stops and joins the members.
    private func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        pthread_mutex_lock(lock)
        generation.pointee.wrappingAdd(1, ordering: .sequentiallyConsistent)
        pthread_cond_broadcast(wake)
        pthread_mutex_unlock(lock)
        for thread in threads { pthread_join(thread, nil) }
        threads = []
    }

    /// Whether `condition` came true while polled without a pause for at most `nanoseconds`.
    private static func poll(for nanoseconds: UInt64, until condition: () -> Bool) -> Bool {
        if condition() { return true }
        let start = Self.nanoseconds()
        while true {
            // The clock costs more than a look at a counter: read it every so many looks.
            for _ in 0..<64 where condition() { return true }
            if Self.nanoseconds() - start >= nanoseconds { return condition() }
        }
    }

    private static func nanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
