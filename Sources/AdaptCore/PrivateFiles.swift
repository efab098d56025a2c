import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The state directory is private (DESIGN.md): directories 0700 and files 0600, whatever the process umask.
///
/// Modes are passed to `mkdir` and `open` rather than set with `umask`, which is process-wide and would race
/// with every other thread creating files; the umask can only remove bits, so 0700 and 0600 survive any
/// umask. Files that existed before (an older install, a copy made by hand) are tightened by `tighten`.
public enum PrivateFiles {
    public static let directoryMode: mode_t = 0o700
    public static let fileMode: mode_t = 0o600

    /// Creates `directory` and every missing parent, each new one 0700; existing ones are left as they are.
    public static func createDirectory(_ directory: URL) throws {
        let path = directory.standardizedFileURL.path
        var status = stat()
        if stat(path, &status) == 0 {
            guard status.st_mode & S_IFMT == S_IFDIR else {
                throw CoreError.fileUnwritable(path: path, reason: "it is not a directory")
            }
            return
        }
        let parent = directory.standardizedFileURL.deletingLastPathComponent()
        if parent.path != path { try createDirectory(parent) }
        guard mkdir(path, directoryMode) == 0 || errno == EEXIST else {
            throw CoreError.fileUnwritable(path: path, reason: AtomicFile.errnoText())
        }
    }

    /// What `tighten` changed.
    public struct Tightening: Sendable, Equatable {
        /// Paths whose group or other permission bits were removed.
        public var paths: Int = 0
        /// Loose paths that could not be changed (a read-only file system, another user's file).
        public var unchanged: Int = 0
    }

    /// Removes every group and other permission bit under `root` (and of `root` itself): directories become
    /// 0700 at most, files 0600 at most. Symlinks are not followed (a link to a shared model file stays
    /// pointing there, and what it points to is not ours to change). Nothing already private is touched.
    /// With `onlyEntries`, only those names directly under `root` are visited (and all beneath them): what else
    /// lies in `root` was not made by whoever asks, and keeps its modes.
    @discardableResult
    public static func tighten(_ root: URL, onlyEntries: Set<String>? = nil) -> Tightening {
        var result = Tightening()
        let rootPath = root.standardizedFileURL.path
        var pending = [rootPath]
        while let path = pending.popLast() {
            var status = stat()
            guard lstat(path, &status) == 0 else { continue }  // removed meanwhile
            let kind = status.st_mode & S_IFMT
            guard kind == S_IFDIR || kind == S_IFREG else { continue }
            let loose = status.st_mode & 0o077
            if loose != 0 {
                // A read-only state (a mounted backup) can still be read: what cannot be changed is counted.
                if chmod(path, status.st_mode & 0o7700) == 0 { result.paths += 1 } else { result.unchanged += 1 }
            }
            if kind == S_IFDIR, var names = try? FileManager.default.contentsOfDirectory(atPath: path) {
                if path == rootPath, let onlyEntries { names = names.filter(onlyEntries.contains) }
                pending += names.map { path + "/" + $0 }
            }
        }
        return result
    }
}
