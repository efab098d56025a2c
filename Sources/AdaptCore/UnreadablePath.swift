import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Why a path cannot be read, as a reason a user can act on: "no such file" for a loop of symbolic links or a
/// FIFO sends them looking for a file that is there.
public enum UnreadablePath {
    /// The reason for a path where nothing at all is, not even a dangling link: callers that look elsewhere then
    /// (a model name in the state's models/) compare against it.
    public static let missing = "no such file"

    public static func reason(_ path: String) -> String {
        var status = stat()
        if stat(path, &status) == 0 {
            switch status.st_mode & S_IFMT {
            case S_IFDIR: return "it is a directory, not a file"
            case S_IFIFO: return "it is a FIFO, not a regular file"
            case S_IFCHR, S_IFBLK: return "it is a device, not a regular file"
            case S_IFSOCK: return "it is a socket, not a regular file"
            default: break
            }
            return access(path, R_OK) == 0 ? "it could not be read" : "permission denied (its mode is \(String(status.st_mode & 0o777, radix: 8)))"
        }
        switch errno {
        case ELOOP:
            return "its symbolic links form a loop"
        case ENOENT:
            var link = stat()
            guard lstat(path, &link) == 0, link.st_mode & S_IFMT == S_IFLNK else { return missing }
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? "?"
            return "it is a symbolic link to \(target), which does not exist"
        case EACCES:
            return "permission denied on a directory of its path"
        case ENOTDIR:
            return "a part of its path is not a directory"
        case ENAMETOOLONG:
            return "the path is too long"
        default:
            return String(cString: strerror(errno))
        }
    }
}
