import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Starting a program that may outlive this process (a server, a watchdog) without taking its open files along.
///
/// Through `posix_spawn` and `waitpid` rather than Foundation's `Process`, which learns that a child ended when a
/// socket the child inherited closes: a server the child leaves running inherits it too, so the wait would last as
/// long as the server. Output goes to a file for the same reason.
enum DetachedSpawn {
    /// Starts `command` (its first element an absolute path) with stdin from /dev/null and stdout and stderr
    /// into `outputPath`; nil if it could not.
    static func start(_ command: [String], outputPath: String) -> pid_t? {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of this process reaches the program: a pipe another test opened for its own child at this
        // moment, inherited by a program that lives on, would keep that child's output from ever ending.
        // (glibc ≥ 2.34 has it; Swift's Glibc module does not declare it, so it is looked up.)
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
        }
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "PGDATA")  // pg_ctl and initdb would prefer it to the directory they are given
        let argv = command.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, command[0], &actions, nil, argv, envp)
        guard spawned == 0 else {
            errno = spawned
            return nil
        }
        return pid
    }
}
