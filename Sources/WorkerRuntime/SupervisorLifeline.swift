import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A worker's side of the pipe `adapt work` gives it as standard input (see `WorkerSupervisor`): end of file
/// means the supervisor is dead, and the worker must not outlive it.
public enum SupervisorLifeline {
    /// Watches standard input on a thread of its own; at end of file (or a read error) calls `gone` once, then
    /// ends the process after `grace` if it is still running: a step busy in a long computation may not reach
    /// a point where it notices the stop, and an orphan must not keep running it.
    public static func watchStandardInput(grace: Duration, gone: @escaping @Sendable () -> Void) {
        let thread = Thread {
            var byte: UInt8 = 0
            while true {
                let count = read(STDIN_FILENO, &byte, 1)
                if count > 0 { continue }
                if count < 0 && errno == EINTR { continue }
                break
            }
            gone()
            let seconds = Double(grace.components.seconds) + Double(grace.components.attoseconds) / 1e18
            Thread.sleep(forTimeInterval: seconds)
            _exit(1)
        }
        thread.name = "supervisor-lifeline"
        thread.start()
    }
}
