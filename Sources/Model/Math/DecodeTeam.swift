import AdaptCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The threads that share single-token decoding's matrix–vector products, kept for the life of the process.
///
/// A decoded token is about 200 short products (a millisecond or less each), too short to wake a sleeping
/// thread for, and a generation can last minutes, too long for `WorkerTeam`'s always-spinning members. So
/// the members spin (yielding the core on each turn) for `spinNanoseconds` after their last product, as
/// between the products of one token and between tokens, and then sleep on a condition variable, so an idle
/// process costs no CPU.
///
/// Tasks are claimed from one counter in order; every task writes its own outputs, so which member ran it
/// does not change a bit, and a member the machine delays holds up only the task it is on.
///
/// `@unchecked Sendable`: `body` and `tasks` are written by the caller only before it publishes a new
/// generation (sequentially consistent) and read by members only after they observed it; the counters are atomics.
final class DecodeTeam: @unchecked Sendable {
    let count: Int
    private let generation = Atomic<Int>(0)
    private let pending = Atomic<Int>(0)
    private let cursor = Atomic<Int>(0)
    private let sleepers = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    private var tasks = 0
    private var body: ((Int) -> Void)? = nil
    private var threads: [pthread_t] = []
    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    static let spinNanoseconds: UInt64 = 5_000_000

    /// A team of `count` members, the caller being one; nil when the system refuses a thread (the caller then
    /// computes alone: the results are the same).
    init?(count: Int) {
        self.count = count
        pthread_mutex_init(lock, nil)
        pthread_cond_init(wake, nil)
        for _ in 1..<max(1, count) {
            let start = Unmanaged.passRetained(self)
            var thread = pthread_t()
            let status = pthread_create(&thread, nil, { raw in
                Unmanaged<DecodeTeam>.fromOpaque(raw!).takeRetainedValue().serve()
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

    deinit {
        pthread_cond_destroy(wake)
        pthread_mutex_destroy(lock)
        lock.deallocate()
        wake.deallocate()
    }

    /// The process's team, made or remade for `count` members when first asked for that size.
    private static let shared = Locked<DecodeTeam?>(nil)

    /// Runs `body(task)` for every task in 0..<tasks on the shared team of `count` members; on the caller alone
    /// when another caller holds the team (concurrent decoders) or threads cannot be had.
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
            team.run(tasks, body)
            return true
        }
        if ran != true {
            for task in 0..<tasks { body(task) }
        }
    }

    private func run(_ tasks: Int, _ body: (Int) -> Void) {
        withoutActuallyEscaping(body) { body in
            self.body = body
            self.tasks = tasks
            cursor.store(0, ordering: .relaxed)
            pending.store(threads.count, ordering: .relaxed)
            generation.wrappingAdd(1, ordering: .sequentiallyConsistent)
            if sleepers.load(ordering: .sequentiallyConsistent) > 0 {
                pthread_mutex_lock(lock)
                pthread_cond_broadcast(wake)
                pthread_mutex_unlock(lock)
            }
            work()
            while pending.load(ordering: .acquiring) != 0 { sched_yield() }
            self.body = nil
        }
    }

    private func work() {
        while true {
            let task = cursor.wrappingAdd(1, ordering: .relaxed).oldValue
            if task >= tasks { return }
            body!(task)
        }
    }

    private func serve() {
        // Generation 0 is the one the team was made in: a member whose thread starts only after the first run
        // was published must still see that run as new.
        var seen = 0
        while true {
            var spunSince: UInt64? = nil
            while generation.load(ordering: .acquiring) == seen {
                let now = Self.nanoseconds()
                if spunSince == nil { spunSince = now }
                if now - spunSince! < Self.spinNanoseconds {
                    sched_yield()
                    continue
                }
                pthread_mutex_lock(lock)
                sleepers.wrappingAdd(1, ordering: .sequentiallyConsistent)
                while generation.load(ordering: .sequentiallyConsistent) == seen { pthread_cond_wait(wake, lock) }
                sleepers.wrappingSubtract(1, ordering: .sequentiallyConsistent)
                pthread_mutex_unlock(lock)
            }
            seen = generation.load(ordering: .acquiring)
            if stopping.load(ordering: .acquiring) { return }
            work()
            pending.wrappingSubtract(1, ordering: .releasing)
        }
    }

    /// Stops and joins the members.
    private func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        pthread_mutex_lock(lock)
        generation.wrappingAdd(1, ordering: .sequentiallyConsistent)
        pthread_cond_broadcast(wake)
        pthread_mutex_unlock(lock)
        for thread in threads { pthread_join(thread, nil) }
        threads = []
    }

    private static func nanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
