import Synchronization

/// A value shared by the threads of a test, behind a mutex held by a class. A `Mutex` local captured by a closure
/// that other threads run is a noncopyable capture, which ThreadSanitizer reports as overlapping modifying
/// accesses of the variable itself (`scripts/test --sanitize thread`); captured through this class's reference,
/// the only accesses are the mutex's.
public final class LockedValue<T>: @unchecked Sendable {
    // All access goes through the mutex.
    private let mutex: Mutex<T>
    public init(_ value: sending T) { mutex = Mutex(value) }
    public func withLock<R>(_ body: (inout sending T) -> R) -> R { mutex.withLock { body(&$0) } }
}
