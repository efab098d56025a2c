import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A program run to its end with the most memory it held: `wait4` reports the peak resident size of exactly that
/// child, where `getrusage(RUSAGE_CHILDREN)` would mix in every other test's children.
public struct PeakMemoryRun: Sendable {
    public let status: Int32
    public let stderr: String
    /// The child's peak resident set size, in bytes.
    public let peakBytes: Int
    public let seconds: Double

    /// Runs the built executable `name` with `arguments` and this process's environment merged with `environment`;
    /// stdin is /dev/null, stdout is dropped, stderr is kept. A child killed by a signal reports 128 + the signal.
    public static func run(_ name: String, _ arguments: [String], environment: [String: String] = [:]) throws -> PeakMemoryRun {
        let directory = TemporaryDirectory("peak-memory")
        let stderrPath = directory.file("stderr").path
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let command = [Executables.url(name).path] + arguments
        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let argv = command.map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        let started = Date()
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, command[0], &actions, nil, argv, envp)
        guard spawned == 0 else { throw CocoaError(.executableLoad, userInfo: [NSFilePathErrorKey: command[0]]) }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        let seconds = Date().timeIntervalSince(started)
        // The low 7 bits are the signal that ended the child (0 when it exited), the next 8 its exit status.
        let signal = status & 0x7F
        let code = signal == 0 ? (status >> 8) & 0xFF : 128 + signal
        let text = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
        // ru_maxrss is in kilobytes on Linux.
        return PeakMemoryRun(status: code, stderr: text, peakBytes: Int(usage.ru_maxrss) * 1024, seconds: seconds)
    }
}
