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

    /// The path a write to `url` replaces: `url` itself. Throws when something other than a regular file is there:
    /// a directory, a device, a FIFO, a socket, or a symbolic link, which is never written through (the file it
    /// names may be a state's database or a model that a write would destroy); the same rule as `O_NOFOLLOW`.
    public static func replaceablePath(_ url: URL) throws -> URL {
        var status = stat()
        guard lstat(url.path, &status) == 0 else { return url }  // nothing there yet
        if status.st_mode & S_IFMT == S_IFLNK {
            throw CoreError.fileUnwritable(path: url.path, reason: "it is a symbolic link, which adapt does not write through; name the file itself")
        }
        if let kind = irregularKind(status) {
            throw CoreError.fileUnwritable(path: url.path, reason: "it is \(kind), which a write would replace; choose a file path")
        }
        return url
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
