import AdaptCore
import Foundation

/// An exclusive flock(2) on a lock file beside a migrate's target directory (`.NAME.migrate-lock`), so two
/// migrates into one directory cannot clear each other's half-built copy. The kernel releases it if the process
/// dies; the file itself stays (removing it would let a third migrate lock a new file while the second holds
/// the old one).
struct TargetLock {
    private let descriptor: Int32

    /// Takes the lock, or throws `MigrationError.targetBusy` at once when another migrate holds it.
    init(beside target: URL) throws {
        let path = target.deletingLastPathComponent().appendingPathComponent(".\(target.lastPathComponent).migrate-lock").path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, PrivateFiles.fileMode)
        guard fd >= 0 else { throw CoreError.fileUnwritable(path: path, reason: String(cString: strerror(errno))) }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let error = errno
            guard error == EINTR else {
                close(fd)
                if error == EWOULDBLOCK { throw MigrationError.targetBusy(target: target.path, lock: path) }
                throw CoreError.fileUnwritable(path: path, reason: String(cString: strerror(error)))
            }
        }
        descriptor = fd
    }

    func release() { close(descriptor) }
}
