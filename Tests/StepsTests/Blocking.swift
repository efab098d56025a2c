import Foundation

/// Runs blocking work (waiting for a child process, training in this process) on a thread of its own.
///
/// Swift Testing runs test functions on the cooperative thread pool, which has one thread per core (two here):
/// a test that blocks such a thread for seconds starves every other suite's async tests running beside it.
/// Assertions stay in the test's task; only the blocking call moves.
func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.stackSize = 8 << 20
        thread.start()
    }
}
