import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Clean-up that outlives a test process killed with SIGKILL, which runs no `deinit` and no exit handler, while
/// what it set up (a server, a network namespace and the programs inside) would live on.
///
/// A small shell is left behind: it polls for the test process once a second and, when it is gone, runs the
/// clean-up. After a normal release the clean-up finds little or nothing left to do.
enum Watchdog {
    /// Leaves `cleanup` (shell code that reads `arguments` as `$2`, `$3`, …; `$1` is the test process's pid)
    /// to run once this process has ended. `name` shows in `ps`.
    static func leave(_ name: String, cleanup: String, arguments: [String]) {
        let script = "while kill -0 \"$1\" 2>/dev/null; do sleep 1; done\n" + cleanup
        _ = DetachedSpawn.start(["/bin/sh", "-c", script, name, String(getpid())] + arguments, outputPath: "/dev/null")
    }
}
