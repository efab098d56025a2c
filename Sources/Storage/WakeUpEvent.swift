import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A pipe one thread writes to so that another, blocked in `poll` on its reading end (as
/// `PostgresConnection.waitForNotifications` is), returns at once. Both ends are non-blocking: a raise never
/// blocks (a full pipe is raised already), and raises nobody has consumed yet wake the next wait once.
public final class WakeUpEvent: Sendable {
    let descriptor: Int32
    private let writingEnd: Int32

    public init() {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends {
                _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            }
        } else {
            // No descriptor left: the event is inert (poll skips a negative descriptor), and waits end by their
            // timeouts alone.
            ends = [-1, -1]
        }
        (descriptor, writingEnd) = (ends[0], ends[1])
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
        if writingEnd >= 0 { close(writingEnd) }
    }

    public func raise() {
        guard writingEnd >= 0 else { return }
        var byte: UInt8 = 1
        _ = write(writingEnd, &byte, 1)
    }

    /// Clears the raises so far; true when there was one.
    func consume() -> Bool {
        guard descriptor >= 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 64)
        var any = false
        while read(descriptor, &buffer, buffer.count) > 0 { any = true }
        return any
    }
}
