import CBLAS
import Foundation

/// Single-precision matrix products on OpenBLAS; the only code in the project that calls cblas.
///
/// All matrices are row-major. The thread count is a process-wide OpenBLAS setting and changes results in the
/// last bits (1 and 2 threads differ by about 1e-5 on this model's shapes), so a run fixes it once, records it,
/// and a resumed or replayed run sets the recorded value again.
public enum BLAS {
    /// C (m×n) = alpha · op(A) · op(B) + beta · C, where op(A) is m×k and op(B) is k×n.
    /// `lda`, `ldb`, `ldc` default to the row lengths of the stored (untransposed) matrices.
    @inline(__always)
    public static func sgemm(transposeA: Bool = false, transposeB: Bool = false,
                             m: Int, n: Int, k: Int, alpha: Float = 1,
                             a: UnsafePointer<Float>, lda: Int? = nil,
                             b: UnsafePointer<Float>, ldb: Int? = nil,
                             beta: Float = 0, c: UnsafeMutablePointer<Float>, ldc: Int? = nil) {
        cblas_sgemm(CblasRowMajor,
                    transposeA ? CblasTrans : CblasNoTrans,
                    transposeB ? CblasTrans : CblasNoTrans,
                    Int32(m), Int32(n), Int32(k), alpha,
                    a, Int32(lda ?? (transposeA ? m : k)),
                    b, Int32(ldb ?? (transposeB ? k : n)),
                    beta, c, Int32(ldc ?? n))
    }

    /// y (m) = alpha · op(A) · x + beta · y, A stored m×n row-major.
    @inline(__always)
    public static func sgemv(transpose: Bool = false, m: Int, n: Int, alpha: Float = 1,
                             a: UnsafePointer<Float>, lda: Int? = nil, x: UnsafePointer<Float>,
                             beta: Float = 0, y: UnsafeMutablePointer<Float>) {
        cblas_sgemv(CblasRowMajor, transpose ? CblasTrans : CblasNoTrans, Int32(m), Int32(n), alpha,
                    a, Int32(lda ?? n), x, 1, beta, y, 1)
    }

    /// y += alpha · x over `count` elements.
    @inline(__always)
    public static func saxpy(count: Int, alpha: Float, x: UnsafePointer<Float>, y: UnsafeMutablePointer<Float>) {
        cblas_saxpy(Int32(count), alpha, x, 1, y, 1)
    }

    /// The dot product of two vectors of `count` elements.
    @inline(__always)
    public static func sdot(count: Int, _ x: UnsafePointer<Float>, _ y: UnsafePointer<Float>) -> Float {
        cblas_sdot(Int32(count), x, 1, y, 1)
    }

    /// Stops OpenBLAS's idle worker threads; call first thing in every executable.
    ///
    /// OpenBLAS starts its threads when the library is loaded, and they spin (`sched_yield`) for about 2^28
    /// cycles before they sleep: ~0.1 s of a second core burnt by every process, including the many that never
    /// multiply a matrix (queue commands, idle workers). The first multi-threaded call starts them again, with
    /// the same thread count, so results are unchanged.
    public static func stopIdleThreads() {
        _ = blas_thread_shutdown_()
    }

    /// OpenBLAS's worker thread count for this process. Setting it waits for computations that hold the count.
    public static var threads: Int {
        get { Int(openblas_get_num_threads()) }
        set { countLock.withLock { openblas_set_num_threads(Int32(max(1, newValue))) } }
    }

    /// Runs `body` with OpenBLAS at `count` threads (nil keeps the current count) and restores the count after.
    ///
    /// The count is one setting for the whole process while its bits show in every product, so the computations
    /// whose results must repeat hold it: another thread's change (a training pass runs OpenBLAS single-threaded
    /// for its duration) then waits instead of landing in the middle of them. Re-entrant on one thread.
    public static func withThreadCount<T>(_ count: Int? = nil, _ body: () throws -> T) rethrows -> T {
        try countLock.withLock {
            let previous = Int32(openblas_get_num_threads())
            let wanted = Int32(max(1, count ?? Int(previous)))
            guard wanted != previous else { return try body() }
            openblas_set_num_threads(wanted)
            defer { openblas_set_num_threads(previous) }
            return try body()
        }
    }

    private static let countLock = NSRecursiveLock()

    /// The most threads this OpenBLAS build runs (its `MAX_THREADS`, in the build's configuration string).
    /// Asking OpenBLAS for more silently gets this many.
    public static let maximumThreads: Int = {
        let configuration = String(cString: openblas_get_config())
        guard let range = configuration.range(of: "MAX_THREADS=") else { return 64 }
        return Int(configuration[range.upperBound...].prefix { $0.isNumber }) ?? 64
    }()

    /// Sets the thread count a run asked for, refusing more than OpenBLAS would run: the run would record a
    /// count that did not compute it, and its training team would quietly shrink.
    public static func setThreads(_ count: Int) throws {
        guard (1...maximumThreads).contains(count) else {
            throw ModelError.tooManyThreads(requested: count, maximum: maximumThreads)
        }
        threads = count
    }
}
