import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Every file the project reads whole or replaces is a plain file. Opening a FIFO blocks until a writer
/// comes, a device such as /dev/zero never ends, and renaming over a device or a directory would replace
/// it; so paths are checked before they are opened or replaced.
public enum RegularFile {
    /// Throws unless `url` names an existing regular file (after following symlinks).
    public static func requireReadable(_ url: URL) throws {
        var status = stat()
        guard stat(url.path, &status) == 0 else {
            throw CoreError.fileUnreadable(path: url.path, reason: AtomicFile.errnoText())
        }
        if let kind = irregularKind(status) {
            throw CoreError.fileUnreadable(path: url.path, reason: "it is \(kind), not a regular file")
        }
    }

    /// The path a write to `url` should replace: `url` itself, or the file a symlink at `url` points to.
    /// Throws when something other than a regular file (a directory, a device, a FIFO, a socket) is there.
    public static func replaceablePath(_ url: URL) throws -> URL {
        let target = url.resolvingSymlinksInPath()
        var status = stat()
        guard stat(target.path, &status) == 0 else { return target }  // nothing there yet
        if let kind = irregularKind(status) {
            throw CoreError.fileUnwritable(path: url.path, reason: "it is \(kind), which a write would replace; choose a file path")
        }
        return target
    }

    private static func irregularKind(_ status: stat) -> String? {
        switch status.st_mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFDIR: return "a directory"
        case S_IFIFO: return "a FIFO"
        case S_IFCHR, S_IFBLK: return "a device"
        case S_IFSOCK: return "a socket"
        default: return "not a regular file"
        }
    }
}
