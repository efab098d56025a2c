import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A program run to its end with the most memory it held.
///
/// Not `wait4` on a child this process spawns: glibc spawns with `CLONE_VM | CLONE_VFORK`, and Linux carries the
/// memory map's high-water mark across `exec` into the child's `ru_maxrss`, so the child would report this test
/// process's own peak (over a gigabyte after the real-model suites). A small Python process forks the program from
/// its own small map instead and reports what `wait4` says of that grandchild.
public struct PeakMemoryRun: Sendable {
    public let status: Int32
    public let stderr: String
    /// The child's peak resident set size, in bytes.
    public let peakBytes: Int
    public let seconds: Double

    static let forker = """
        import os, sys
        err = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        pid = os.fork()
        if pid == 0:
            os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
            os.dup2(os.open("/dev/null", os.O_WRONLY), 1)
            os.dup2(err, 2)
            os.execv(sys.argv[2], sys.argv[2:])
        _, status, usage = os.wait4(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        print(code if code >= 0 else 128 - code, usage.ru_maxrss)
        """

    /// Runs the built executable `name` with `arguments` and this process's environment merged with `environment`;
    /// stdin is /dev/null, stdout is dropped, stderr is kept. A child killed by a signal reports 128 + the signal.
    public static func run(_ name: String, _ arguments: [String], environment: [String: String] = [:]) throws -> PeakMemoryRun {
        let directory = TemporaryDirectory("peak-memory")
        let stderrPath = directory.file("stderr").path
        let started = Date()
        let forker = try Executables.run(executableAt: URL(fileURLWithPath: "/usr/bin/python3"),
                                         ["-c", forker, stderrPath, Executables.url(name).path] + arguments, environment: environment)
        let seconds = Date().timeIntervalSince(started)
        let fields = forker.stdout.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        guard forker.status == 0, fields.count == 2 else {
            throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "the forking python failed: \(forker.stderr)"])
        }
        let text = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
        // ru_maxrss is in kilobytes on Linux.
        return PeakMemoryRun(status: Int32(fields[0]), stderr: text, peakBytes: fields[1] * 1024, seconds: seconds)
    }
}
