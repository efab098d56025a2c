import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A pipeline's notify command, run in a process group of its own so that a deadline ends all of it: a command
/// that ignores SIGTERM, or a shell script whose children outlive it, would otherwise keep `adapt work` waiting
/// past the time it promised.
struct NotifyCommand {
    enum Ending: Equatable {
        case exited(Int32)
        case signalled(Int32)
        /// Still running at the deadline: its group got SIGTERM, then SIGKILL after `grace` seconds.
        case stopped
        case notStarted
    }

    let command: [String]

    /// Runs the command with `input` on its stdin and its output on this process's stderr, for at most `timeout`
    /// seconds plus `grace`.
    func run(input: Data, timeout: Double, grace: Double = 2) -> Ending {
        // The input goes into the pipe before the command starts (an outcome is far below a pipe's 64 KiB), so a
        // command that exits without reading it cannot end `adapt work` with SIGPIPE.
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return .notStarted }
        // Not inherited by the command beyond the stdin made of it, nor by anything else this process starts.
        for fd in fds where fd != STDIN_FILENO { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        input.withUnsafeBytes { raw in _ = Glibc.write(fds[1], raw.baseAddress, raw.count) }
        close(fds[1])
        defer { close(fds[0]) }

        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawnattr_init(&attributes)
        defer {
            posix_spawn_file_actions_destroy(&actions)
            posix_spawnattr_destroy(&attributes)
        }
        posix_spawn_file_actions_adddup2(&actions, fds[0], STDIN_FILENO)
        posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO)
        // Its own group (pgid = its pid), with default signal handling whatever this process ignores.
        posix_spawnattr_setpgroup(&attributes, 0)
        var defaults = sigset_t()
        sigfillset(&defaults)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        // Through env, so a bare program name is looked up on PATH as a shell would, without a shell.
        let arguments = ["/usr/bin/env", "--"] + command
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, "/usr/bin/env", &actions, &attributes, &argv, environ) == 0 else { return .notStarted }

        let deadline = Date().addingTimeInterval(timeout)
        if let status = wait(pid, until: deadline) { return ending(status) }
        kill(-pid, SIGTERM)
        if wait(pid, until: Date().addingTimeInterval(grace)) == nil {
            kill(-pid, SIGKILL)
            _ = wait(pid, until: .distantFuture)
        }
        // Whatever of its group outlived it gets the same end.
        kill(-pid, SIGKILL)
        return .stopped
    }

    /// The wait status of `pid` once it exited, or nil when it still runs at `deadline`.
    private func wait(_ pid: pid_t, until deadline: Date) -> Int32? {
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { return status }
            if result < 0, errno != EINTR { return status }
            if Date() >= deadline { return nil }
            usleep(10_000)
        }
    }

    private func ending(_ status: Int32) -> Ending {
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import as functions.
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
    }
}
