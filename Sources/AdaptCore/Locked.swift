import Foundation

/// A value shared between threads, reached only while its lock is held: the project's one lock for a value.
///
/// Not `Synchronization.Mutex`: on Linux that one locks through atomics and a futex inside the standard library,
/// which is not instrumented, so ThreadSanitizer never sees the order it gives and reports the values it guards as
/// races (docs/fuzzing.md: a two-thread program using only `Mutex` is reported, the same with `NSLock` is not).
/// `NSLock` is a pthread mutex, whose calls ThreadSanitizer intercepts, so `scripts/test --sanitize thread` checks
/// what these locks guard. The API is `Mutex`'s, so call sites read the same.
///
/// `@unchecked Sendable`: `value` is read and written only inside `withLock` and `withLockIfAvailable`, under `lock`.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    public init(_ initialValue: sending Value) { value = initialValue }

    /// Runs `body` on the value with the lock held, waiting for the lock if another thread holds it.
    public func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    /// Runs `body` on the value with the lock held if the lock is free now; nil, without running it, if not.
    public func withLockIfAvailable<Result, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result? {
        guard lock.try() else { return nil }
        defer { lock.unlock() }
        return try body(&value)
    }
}
