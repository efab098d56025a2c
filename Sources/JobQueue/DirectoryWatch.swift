#if canImport(Glibc)
import Glibc

/// Tells when a file in one directory is written (Linux inotify(7)); the only file that calls inotify.
///
/// A commit in WAL mode writes its frames to the `-wal` file next to the database, so a write there is the
/// first sign of another process's commit; `WorkWaiter` then confirms it with `PRAGMA data_version`. Without
/// inotify (another OS, a file system that does not report writes) `init` fails and the waiter simply polls.
///
/// `@unchecked Sendable`: the descriptor is only read by the one waiter thread, and closed in `deinit`.
final class DirectoryWatch: @unchecked Sendable {
    private let descriptor: Int32

    init?(directory: String) {
        let fd = inotify_init1(Int32(IN_NONBLOCK) | Int32(IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        let mask = UInt32(IN_MODIFY) | UInt32(IN_CREATE) | UInt32(IN_MOVED_TO)
        guard inotify_add_watch(fd, directory, mask) >= 0 else {
            close(fd)
            return nil
        }
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// Waits up to `timeoutMicroseconds` for writes; returns true when any happened (all pending ones are
    /// consumed).
    func wait(timeoutMicroseconds: Int) -> Bool {
        if drain() { return true }
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        _ = poll(&entry, 1, Int32(clamping: (timeoutMicroseconds + 999) / 1_000))
        return drain()
    }

    /// Reads every pending event; true when there was one.
    private func drain() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var any = false
        while buffer.withUnsafeMutableBytes({ read(descriptor, $0.baseAddress, $0.count) }) > 0 { any = true }
        return any
    }
}
#else
/// inotify is Linux-only; elsewhere the waiter polls.
final class DirectoryWatch: Sendable {
    init?(directory: String) { return nil }
    func wait(timeoutMicroseconds: Int) -> Bool { false }
}
#endif
