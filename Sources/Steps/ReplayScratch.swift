import AdaptCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where `adapt replay` rebuilds a run: `<state>/scratch/replay-<pid>-<random>`, mode 0700.
///
/// The scratch holds a copy of the replay buffer's text, so it lives with the state (private like it, reached
/// by erasure with it) and not under the system temporary directory, where it used to be world-readable. A
/// replay killed before it could remove its scratch leaves it behind; the next replay removes every scratch
/// directory whose owner process is gone, which the pid in the name tells.
public enum ReplayScratch {
    public static let prefix = "replay-"

    /// `<state>/scratch`.
    public static func parent(of state: StateDirectory) -> URL { state.root.appendingPathComponent("scratch") }

    /// Removes stale scratch directories, then creates a fresh private one for this process.
    public static func make(in state: StateDirectory, processID: Int32 = getpid()) throws -> URL {
        try make(under: parent(of: state), processID: processID)
    }

    /// A fresh private scratch directory under `parent`, after removing the stale ones there. A bundle replay
    /// (`adapt replay --bundle`) has no state directory and uses the system temporary directory: the scratch
    /// is 0700 and removed when the replay ends, and the next bundle replay removes one a killed replay left.
    public static func make(under parent: URL, processID: Int32 = getpid()) throws -> URL {
        try makePrivateDirectory(parent)
        removeStale(under: parent)
        let url = parent.appendingPathComponent("\(prefix)\(processID)-\(UUID().uuidString.prefix(8).lowercased())")
        try makePrivateDirectory(url, mustBeNew: true)
        return url
    }

    /// Deletes `replay-<pid>-…` directories whose process no longer exists; returns what it removed. A
    /// directory of a live process (another replay running now) is left alone.
    @discardableResult
    public static func removeStale(in state: StateDirectory) -> [URL] {
        removeStale(under: parent(of: state))
    }

    @discardableResult
    public static func removeStale(under parent: URL) -> [URL] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: parent.path) else { return [] }
        var removed: [URL] = []
        for name in names.sorted() where name.hasPrefix(prefix) {
            guard let pid = Int32(name.dropFirst(prefix.count).prefix { $0 != "-" }), pid > 0, !isAlive(pid) else { continue }
            let url = parent.appendingPathComponent(name)
            if (try? FileManager.default.removeItem(at: url)) != nil { removed.append(url) }
        }
        return removed
    }

    /// kill(pid, 0) succeeds, or fails only for lack of permission: either way the process exists.
    static func isAlive(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    /// mkdir with mode 0700 whatever the umask (chmod after), failing when `mustBeNew` and it exists.
    static func makePrivateDirectory(_ url: URL, mustBeNew: Bool = false) throws {
        if mkdir(url.path, 0o700) != 0 {
            let code = errno
            guard code == EEXIST, !mustBeNew else {
                throw CoreError.fileUnwritable(path: url.path, reason: "cannot create the replay scratch directory (errno \(code))")
            }
        }
        guard chmod(url.path, 0o700) == 0 else {
            throw CoreError.fileUnwritable(path: url.path, reason: "cannot make the replay scratch directory private")
        }
    }
}
