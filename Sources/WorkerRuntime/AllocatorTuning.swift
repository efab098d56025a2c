#if canImport(Glibc)
import Glibc
#endif

/// Keeps glibc's allocator from handing freed memory back to the kernel after every job.
///
/// A worker allocates and frees the same few tens of kilobytes per job (SQLite's buffers, the job's JSON).
/// With glibc's default trim threshold, a thread arena's free top is trimmed (`madvise(MADV_DONTNEED)`) and
/// the next job faults the pages back in, a large share of a noop job's system time (BENCHMARKS.md, code
/// choices). A 64 MB threshold keeps them (mallopt(3), M_TRIM_THRESHOLD). mallopt is declared in
/// <malloc.h>, which the Glibc module does not export, so it is looked up by name. The only file that calls it.
enum AllocatorTuning {
    static func keepFreedMemory() {
        #if canImport(Glibc)
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        let mTrimThreshold: Int32 = -1  // M_TRIM_THRESHOLD in <malloc.h>
        _ = unsafeBitCast(symbol, to: Mallopt.self)(mTrimThreshold, 64 << 20)
        #endif
    }
}
