import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A fixed team of threads that runs one body per member and returns when every member has finished.
///
/// A training pass is a long chain of short parallel regions (about 30 per block and direction), so the team
/// lives for one pass and its members wait for the next region by spinning on a counter (yielding the core on
/// each turn), as OpenBLAS's own workers do: waking a sleeping thread costs more than most regions.
/// Member 0 is the calling thread; members 1..<count are threads the team starts and `finish()` joins.
///
/// Determinism: work is cut into tasks as a function of the sizes and the team's size only (`piece`), every
/// task writes its own outputs, and no region reduces into a shared value; which member runs which task is
/// settled at run time (`forEachTask`: its own share first, then whatever is left), so a delayed thread
/// delays only its current task, and no bit depends on it.
///
/// `@unchecked Sendable`: `job` is written by member 0 only before it publishes a new generation (release)
/// and read by the other members only after they observed it (acquire); the counters are atomics.
final class WorkerTeam: @unchecked Sendable {
    let count: Int
    private let generation = Atomic<Int>(0)
    private let pending = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    /// Per member, the next unclaimed task of its home share (see `forEachTask`).
    private let cursors: [Cursor]
    private var job: ((Int) -> Void)? = nil
    private var threads: [pthread_t] = []

    /// A team of `count` members (the caller included); a team of one runs every region inline.
    ///
    /// Throws `ModelError.threadsUnavailable` when the system refuses a thread (a memory or process limit):
    /// the members already started are stopped and joined first. Running with fewer members instead would
    /// change the last bits of the results, which a run's thread count promises. `permitted` is asked before
    /// each member's thread is started; tests answer false to stand for a system that refuses it.
    init(count: Int, permitted: (Int) -> Bool = { _ in true }) throws {
        precondition(count >= 1, "a team needs at least one member")
        self.count = count
        cursors = (0..<count).map { _ in Cursor() }
        for member in 1..<max(1, count) {
            let start = Unmanaged.passRetained(Start(team: self, member: member))
            var thread = pthread_t()
            let status = !permitted(member) ? EAGAIN : pthread_create(&thread, nil, { raw in
                let start = Unmanaged<Start>.fromOpaque(raw!).takeRetainedValue()
                start.team.serve(member: start.member)
                return nil
            }, start.toOpaque())
            guard status == 0 else {
                start.release()   // the thread that would have taken it never started
                finish()
                throw ModelError.threadsUnavailable(requested: count, started: member, reason: String(cString: strerror(status)))
            }
            threads.append(thread)
        }
    }

    private final class Cursor {
        let next = Atomic<Int>(0)
    }

    private final class Start {
        let team: WorkerTeam
        let member: Int
        init(team: WorkerTeam, member: Int) { self.team = team; self.member = member }
    }

    /// The team of one: every region runs inline on the caller.
    static let inline = try! WorkerTeam(count: 1)   // starts no thread, so it cannot fail

    /// Runs `body` with a team of `count` members, stopped and joined when `body` returns.
    ///
    /// The members split the products themselves, so OpenBLAS runs single-threaded meanwhile, for a team of one
    /// too: the results then depend on the team's size alone, never on the process's OpenBLAS setting.
    static func with<Result>(count: Int, _ body: (WorkerTeam) -> Result) throws -> Result {
        try BLAS.withThreadCount(1) {
            if count == 1 { return body(inline) }
            let team = try WorkerTeam(count: count)
            defer { team.finish() }
            return body(team)
        }
    }

    /// Stops and joins the members (each holds the team until then); the team runs regions inline afterwards.
    func finish() {
        guard !threads.isEmpty else { return }
        stopping.store(true, ordering: .releasing)
        generation.wrappingAdd(1, ordering: .releasing)
        for thread in threads { pthread_join(thread, nil) }
        threads = []
    }

    private func serve(member: Int) {
        var seen = 0
        while true {
            var current = generation.load(ordering: .acquiring)
            while current == seen {
                sched_yield()
                current = generation.load(ordering: .acquiring)
            }
            seen = current
            if stopping.load(ordering: .acquiring) { return }
            job!(member)
            pending.wrappingSubtract(1, ordering: .releasing)
        }
    }

    /// Runs `body(member)` for every member, the caller being member 0, and returns when all have returned.
    func run(_ body: (Int) -> Void) {
        if threads.isEmpty {
            for member in 0..<count { body(member) }
            return
        }
        withoutActuallyEscaping(body) { body in
            job = body
            pending.store(threads.count, ordering: .relaxed)
            generation.wrappingAdd(1, ordering: .releasing)
            body(0)
            while pending.load(ordering: .acquiring) != 0 { sched_yield() }
            job = nil
        }
    }

    /// Piece `index` of 0..<total cut into `parts` contiguous pieces in order, boundaries on multiples of `align`.
    static func piece(_ total: Int, _ index: Int, of parts: Int, align: Int = 1) -> Range<Int> {
        let units = (total + align - 1) / align
        let lower = min(total, units * index / parts * align)
        let upper = min(total, units * (index + 1) / parts * align)
        return lower..<upper
    }

    /// Runs `body(task)` once for every task in 0..<tasks, spread over the members. Member m first works
    /// through its home share `piece(tasks, m, of: count)`, so on a quiet machine every member keeps the same
    /// rows and columns from one region to the next (and in its own core's cache); then it takes unclaimed
    /// tasks from the other shares, so a member the machine delays holds up only the task it is on. The
    /// tasks must write disjoint outputs: then which member ran a task does not matter to any bit.
    func forEachTask(_ tasks: Int, _ body: (Int) -> Void) {
        if count == 1 || tasks < 2 {
            for task in 0..<tasks { body(task) }
            return
        }
        for (member, cursor) in cursors.enumerated() {
            cursor.next.store(Self.piece(tasks, member, of: count).lowerBound, ordering: .relaxed)   // published by `run`
        }
        run { member in
            for offset in 0..<count {
                let home = (member + offset) % count
                let end = Self.piece(tasks, home, of: count).upperBound
                while true {
                    let task = cursors[home].next.wrappingAdd(1, ordering: .relaxed).oldValue
                    if task >= end { break }
                    body(task)
                }
            }
        }
    }

    /// Runs `body` on pieces of 0..<total (see `piece`) as tasks: up to one per member, each at least `minimum`
    /// long. (Two per member, for finer balance, made a 2-thread step slower: twice the packing of the shared
    /// operand and smaller products; BENCHMARKS.md, code choices.)
    func forEachRange(_ total: Int, align: Int = 1, minimum: Int = 1, _ body: (Range<Int>) -> Void) {
        let parts = max(1, min(count, total / max(minimum, align)))
        if parts == 1 {
            if total > 0 { body(0..<total) }
            return
        }
        forEachTask(parts) { index in
            let share = Self.piece(total, index, of: parts, align: align)
            if !share.isEmpty { body(share) }
        }
    }
}

extension WorkerTeam {
    /// `BLAS.sgemm` split across the members by columns of C (or by rows when C is narrow); every member's
    /// product is a whole sgemm on its block, so no sum is split and the result does not depend on which
    /// member computed what. Small products run on the caller alone. Callers keep OpenBLAS single-threaded
    /// while a team of more than one runs.
    func sgemm(transposeA: Bool = false, transposeB: Bool = false,
               m: Int, n: Int, k: Int, alpha: Float = 1,
               a: UnsafePointer<Float>, lda: Int? = nil,
               b: UnsafePointer<Float>, ldb: Int? = nil,
               beta: Float = 0, c: UnsafeMutablePointer<Float>, ldc: Int? = nil) {
        let lda = lda ?? (transposeA ? m : k), ldb = ldb ?? (transposeB ? k : n), ldc = ldc ?? n
        if count == 1 || m * n * k < 1 << 17 {
            BLAS.sgemm(transposeA: transposeA, transposeB: transposeB, m: m, n: n, k: k, alpha: alpha,
                       a: a, lda: lda, b: b, ldb: ldb, beta: beta, c: c, ldc: ldc)
        } else if n >= 64 * count {
            // Columns on multiples of 16: whole tiles of OpenBLAS's sgemm kernels.
            forEachRange(n, align: 16, minimum: 64) { columns in
                BLAS.sgemm(transposeA: transposeA, transposeB: transposeB, m: m, n: columns.count, k: k, alpha: alpha,
                           a: a, lda: lda, b: b + (transposeB ? columns.lowerBound * ldb : columns.lowerBound), ldb: ldb,
                           beta: beta, c: c + columns.lowerBound, ldc: ldc)
            }
        } else {
            forEachRange(m, align: 8, minimum: 32) { rows in
                BLAS.sgemm(transposeA: transposeA, transposeB: transposeB, m: rows.count, n: n, k: k, alpha: alpha,
                           a: a + (transposeA ? rows.lowerBound : rows.lowerBound * lda), lda: lda, b: b, ldb: ldb,
                           beta: beta, c: c + rows.lowerBound * ldc, ldc: ldc)
            }
        }
    }
}
