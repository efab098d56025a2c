import AdaptCore
import CommandLineKit
import Foundation
import Services

/// `adapt doctor`: whether a night can run here, and how to fix what stops it (`Doctor`).
enum DoctorCommand {
    static let all: [Command] = [doctor]

    static let doctor = Command(
        "doctor", summary: "check what a night needs and say how to fix each problem",
        discussion: """
            Checks the state directory (exists, private, room for a night on its disk), the default model (present,
            SHA-256, supported), the libraries (OpenBLAS version, core type and threads; SQLite), the CPU's features,
            the worker executables, the nightly timer (installed for this state, active, its next firing, lingering
            enabled), the database's integrity (PRAGMA quick_check), the last run's outcome, and that each lineage's
            active export serves its active version ('adapt work' rewrites one that does not when it starts). Nothing
            is created or changed. Exit 0 when a night can run (warnings allowed), 1 when a check failed.
            --json prints {night_can_run, state, checks: [{name, status, detail, fix}]}; status is ok, warning or error.
            ADAPT_SYSTEMCTL and ADAPT_LOGINCTL name the systemctl and loginctl to ask (an empty value: none).
            """,
        options: [.json]
    ) { invocation in
        let state = try GlobalOptions.stateDirectory(invocation)
        let workers = WorkerLocation.directory(adaptExecutable: WorkerLocation.currentExecutable)
        let report = Doctor.examine(Doctor.Setup(state: state, workerDirectory: workers))
        if invocation.arguments[.json] {
            Console.print(JSON.pretty(report))
        } else {
            for check in report.checks {
                Console.print(TerminalText.escaped(
                    check.status.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)
                        + check.name.padding(toLength: 17, withPad: " ", startingAt: 0) + check.detail))
                if let fix = check.fix { Console.print(String(repeating: " ", count: 26) + "fix: " + TerminalText.escaped(fix)) }
            }
            let failed = report.checks.filter { $0.status == .error }.count
            Console.print(report.nightCanRun ? "a night can run" : "a night cannot run: \(failed) problem(s) to fix")
        }
        if !report.nightCanRun { throw ExitCode.failure }
    }
}
