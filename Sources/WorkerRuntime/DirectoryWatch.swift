#if canImport(Glibc)
import Glibc

/// Tells when a file in one directory is written (Linux inotify(7)); the only file that calls inotify.
///
/// A commit in WAL mode writes its frames to the `-wal` file next to the database, so a write there is the
/// first sign of another process's commit; `WorkWaiter` then confirms it with `PRAGMA data_version`. Without
/// inotify (another OS, a file system that does not report writes) `init` fails and the waiter simply polls.
///
/// The watch is on only while someone waits (`arm`, `disarm`): while it is on, every write to the folder, by
/// any process, also queues an event for this one, a kernel cost each busy worker would otherwise pay on
/// every WAL frame of every worker (measured: BENCHMARKS.md, code choices).
///
/// `@unchecked Sendable`: the descriptors are only used by the one waiter thread, and closed in `deinit`.
final class DirectoryWatch: @unchecked Sendable {
    private let descriptor: Int32
    private let directory: String
    private var watch: Int32 = -1
    private static let mask = UInt32(IN_MODIFY) | UInt32(IN_CREATE) | UInt32(IN_MOVED_TO)

    init?(directory: String) {
        let fd = inotify_init1(Int32(IN_NONBLOCK) | Int32(IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        descriptor = fd
        self.directory = directory
        guard arm() else { return nil }
    }

    deinit { close(descriptor) }

    /// Starts reporting writes; false when the folder cannot be watched.
    @discardableResult
    func arm() -> Bool {
        guard watch < 0 else { return true }
        watch = inotify_add_watch(descriptor, directory, Self.mask)
        return watch >= 0
    }

    /// Stops reporting writes until the next `arm`.
    func disarm() {
        guard watch >= 0 else { return }
        inotify_rm_watch(descriptor, watch)
        watch = -1
        _ = drain()  // including the IN_IGNORED that removing the watch queues
    }

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
    @discardableResult func arm() -> Bool { false }
    func disarm() {}
    func wait(timeoutMicroseconds: Int) -> Bool { false }
}
#endif
