import AdaptCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The lock that lets one `adapt work` at a time supervise a state directory: an exclusive `flock` on
/// `work.lock` in it, held for the supervisor's whole life.
///
/// The kernel drops a `flock` when its holder dies, however it dies (SIGKILL included), so a stale lock never
/// needs cleaning up. The file is opened close-on-exec: a worker executable inheriting it would keep the lock
/// alive after its supervisor's death. The holder writes its pid into the file, which is how a refused
/// supervisor names it.
public final class SupervisorLock: Sendable {
    public let path: String
    private let descriptor: Int32

    /// Takes the lock, or throws `SupervisorError.alreadySupervised` naming the pid that holds it.
    public init(stateRoot: URL) throws {
        path = stateRoot.appendingPathComponent("work.lock").path
        // O_NOFOLLOW: the file is truncated and written below, so a link planted at its path must not lead there.
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw SupervisorError.lockUnavailable(path: path, reason: String(cString: strerror(errno))) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let reason = errno
            let holder = Self.recordedPID(fd)
            close(fd)
            if reason == EWOULDBLOCK { throw SupervisorError.alreadySupervised(path: path, pid: holder) }
            throw SupervisorError.lockUnavailable(path: path, reason: String(cString: strerror(reason)))
        }
        let text = "\(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = text.withCString { pwrite(fd, $0, strlen($0), 0) }
        descriptor = fd
    }

    deinit { close(descriptor) }

    private static func recordedPID(_ fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = pread(fd, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        return Int32(String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
