import Foundation
@testable import Services
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A notify command gets its time and no more: `adapt work` waits for it, so one that ignores SIGTERM, or leaves
/// children behind, must not hold the worker past its deadline.
@Suite struct NotifyCommandTests {
    /// The pids a shell command wrote to `file`, one a line.
    func pids(in file: URL) throws -> [pid_t] {
        try String(contentsOf: file, encoding: .utf8).split(separator: "\n").compactMap { pid_t($0) }
    }

    @Test func aCommandThatIgnoresSIGTERMIsKilledWithItsChildrenAtTheDeadline() throws {
        let directory = TemporaryDirectory("adapt-notify")
        let file = directory.file("pids")
        // The shell ignores TERM and so does the child it leaves running; both write their pid first.
        let script = "trap '' TERM; sh -c 'trap \"\" TERM; echo $$ >> \(file.path); while :; do sleep 0.1; done' & "
            + "echo $$ >> \(file.path); while :; do sleep 0.1; done"
        let started = Date()
        let ending = NotifyCommand(command: ["sh", "-c", script]).run(input: Data("{}\n".utf8), timeout: 1, grace: 0.5)
        let elapsed = Date().timeIntervalSince(started)
        #expect(ending == .stopped)
        #expect(elapsed < 10, "stopped after \(elapsed) s")
        let written = try pids(in: file)
        #expect(written.count == 2, "\(written)")
        // Killed processes linger as zombies until their new parent reaps them: dead either way.
        func ended(_ pid: pid_t) -> Bool {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
            return stat.split(separator: ")").last?.trimmingCharacters(in: .whitespaces).first == "Z"
        }
        let deadline = Date().addingTimeInterval(5)
        while !written.allSatisfy(ended), Date() < deadline { usleep(10_000) }
        for pid in written { #expect(ended(pid), "process \(pid) of the command's group still runs") }
    }

    @Test func aCommandReadsTheOutcomeOnItsStandardInputAndItsExitStatusIsReported() throws {
        let directory = TemporaryDirectory("adapt-notify")
        let file = directory.file("stdin")
        let delivered = NotifyCommand(command: ["sh", "-c", "cat > \(file.path)"]).run(input: Data("{\"run_id\": \"run-1\"}\n".utf8), timeout: 10)
        #expect(delivered == .exited(0))
        #expect(try String(contentsOf: file, encoding: .utf8) == "{\"run_id\": \"run-1\"}\n")
        #expect(NotifyCommand(command: ["sh", "-c", "exit 3"]).run(input: Data(), timeout: 10) == .exited(3))
        #expect(NotifyCommand(command: ["sh", "-c", "kill -9 $$"]).run(input: Data(), timeout: 10) == .signalled(SIGKILL))
        #expect(NotifyCommand(command: ["no-such-notify-command-here"]).run(input: Data(), timeout: 10) == .exited(127))
    }
}
