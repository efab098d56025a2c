import AdaptCore
import Foundation
import Testing

/// `Locked` is what every shared value of the engine sits behind; `scripts/test --sanitize thread` runs these
/// too, so a lock ThreadSanitizer could not see would be reported here first.
struct LockedTests {
    private struct Refused: Error {}

    @Test func twoThreadsIncrementingUnderTheLockLoseNoUpdate() {
        let count = Locked(0)
        let done = DispatchGroup()
        for _ in 0..<2 {
            done.enter()
            Thread {
                for _ in 0..<50_000 { count.withLock { $0 += 1 } }
                done.leave()
            }.start()
        }
        done.wait()
        #expect(count.withLock { $0 } == 100_000)
    }

    @Test func withLockIfAvailableRunsNothingWhileAnotherThreadHoldsTheLock() {
        let value = Locked([1])
        let holding = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), released = DispatchSemaphore(value: 0)
        Thread {
            value.withLock { _ in
                holding.signal()
                release.wait()
            }
            released.signal()
        }.start()
        holding.wait()
        var ran = false
        #expect(value.withLockIfAvailable { values -> Int in ran = true; return values.count } == nil)
        #expect(!ran)
        release.signal()
        released.wait()
        #expect(value.withLockIfAvailable { values -> Int in values.append(2); return values.count } == 2)
        #expect(value.withLock { $0 } == [1, 2])
    }

    @Test func anErrorThrownInsideIsTheCallersAndLeavesTheLockFree() {
        let value = Locked("kept")
        #expect(throws: Refused.self) {
            try value.withLock { (text: inout String) throws(Refused) in
                text = "changed before the error"
                throw Refused()
            }
        }
        #expect(value.withLockIfAvailable { $0 } == "changed before the error")
    }
}
