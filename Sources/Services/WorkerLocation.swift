import Foundation

/// Where `adapt work` finds the worker executables: beside `adapt` in a build tree (`.build/debug/`), or in
/// `<prefix>/lib/adapt/` when `adapt` is installed as `<prefix>/bin/adapt` (the Debian package: /usr/bin/adapt
/// and /usr/lib/adapt/), so an installed copy works from wherever its prefix is.
public enum WorkerLocation {
    /// The first of the candidate directories that holds every worker, else the executable's own directory (whose
    /// missing workers the supervisor then names).
    public static func directory(adaptExecutable: URL, kinds: [String] = Nightly.kinds) -> URL {
        let own = adaptExecutable.resolvingSymlinksInPath().deletingLastPathComponent()
        let candidates = [own, own.deletingLastPathComponent().appendingPathComponent("lib/adapt")]
        return candidates.first { directory in
            kinds.allSatisfy { FileManager.default.isExecutableFile(atPath: executable(kind: $0, in: directory).path) }
        } ?? own
    }

    /// This process's executable, through /proc/self/exe (argv[0] may be a bare name found on PATH).
    public static var currentExecutable: URL {
        if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            return URL(fileURLWithPath: path)
        }
        return URL(fileURLWithPath: CommandLine.arguments[0])
    }

    /// `adapt-<kind>-worker` in `directory`.
    public static func executable(kind: String, in directory: URL) -> URL {
        directory.appendingPathComponent("adapt-\(kind)-worker")
    }
}
