import AdaptCore
import CommandLineKit
import Foundation
import Services

/// `adapt schedule install|remove|status`: a systemd user timer per lineage, and the cron line for everyone else.
enum ScheduleCommands {
    static let all: [Command] = [install, remove, status]

    static let install = Command(
        "schedule install", summary: "run a lineage's nightly pipeline every day at a set time (systemd user timer)",
        discussion: "Writes adapt-nightly-LINEAGE.timer and .service under $XDG_CONFIG_HOME/systemd/user (default "
            + "~/.config/systemd/user), then runs 'systemctl --user daemon-reload' and 'enable --now' when a user service "
            + "manager is available. Always prints the equivalent crontab line for systems without systemd.",
        options: [lineageToRun, at, pipeline, dryRun, .json]
    ) { invocation in
        let arguments = invocation.arguments
        let lineage = try arguments.required(lineageToRun).name
        let time = try arguments.required(at)
        let pipelinePathGiven = try arguments[pipeline]
        // Checked before anything reads the paths: each goes verbatim into the unit files and the cron line.
        let statePath = try GlobalOptions.stateDirectory(invocation).root.path
        for (option, value, field) in [("--state", statePath, "state directory"),
                                       ("--pipeline", pipelinePathGiven, "pipeline path")] {
            guard let value else { continue }
            do { try ScheduleService.requireNoControlCharacters(value, field: field) } catch let error as PipelineError {
                throw UsageError("\(option): \(error.description)")
            }
        }
        var pipelinePath: String?
        if let path = pipelinePathGiven {
            // Validate now rather than at 02:00; record an absolute path because the timer has no working directory.
            _ = try PipelineCommands.load(path)
            pipelinePath = URL(fileURLWithPath: path).standardizedFileURL.path
        }
        let schedule = try NightlySchedule(lineage: lineage, time: time, executable: executablePath(),
                                           stateDirectory: statePath,
                                           pipeline: pipelinePath)
        let dryRun = arguments[dryRun]
        let installation = try ScheduleService.install(schedule, dryRun: dryRun)
        let (files, enabled, systemdProblem, enableFailure) =
            (installation.files, installation.enabled, installation.systemdProblem, installation.enableFailure)
        defer { if let enableFailure { Console.error("adapt: error: \(enableFailure)") } }
        if arguments[.json] {
            Console.print(JSON.pretty(InstallReport(
                lineage: lineage, at: time.description, timerPath: files.timer.path, servicePath: files.service.path,
                timer: schedule.timerUnit, service: schedule.serviceUnit, cronLine: schedule.cronLine,
                dryRun: dryRun, written: !dryRun, enabled: enabled, systemdUnavailable: systemdProblem)))
            if let systemdProblem { Console.error("systemd: \(systemdProblem); the timer is written but not enabled") }
            if enableFailure != nil { throw ExitCode.failure }
            return
        }
        if dryRun {
            // The unit directory comes from XDG_CONFIG_HOME or HOME, whatever they hold: escaped as printed.
            Console.print("# \(TerminalText.escaped(files.timer.path))\n\(schedule.timerUnit)")
            Console.print("# \(TerminalText.escaped(files.service.path))\n\(schedule.serviceUnit)")
        } else {
            Console.print("wrote \(TerminalText.escaped(files.timer.path))")
            Console.print("wrote \(TerminalText.escaped(files.service.path))")
            if enabled {
                Console.print("enabled \(schedule.timerName): lineage \(lineage) runs every day at \(time) "
                              + "(see 'systemctl --user list-timers')")
            } else if let systemdProblem {
                Console.error("systemd: \(systemdProblem); the timer is written but not enabled. "
                              + "Use the cron line below instead, or enable it later with "
                              + "'systemctl --user daemon-reload && systemctl --user enable --now \(schedule.timerName)'.")
            }
        }
        Console.print("# without systemd, add this line with 'crontab -e':")
        Console.print(schedule.cronLine)
        if enableFailure != nil { throw ExitCode.failure }
    }

    static let remove = Command(
        "schedule remove", summary: "stop and delete a lineage's nightly timer",
        discussion: "Disables the timer when a user service manager is available, deletes both unit files and reloads. "
            + "A cron line added by hand must be removed by hand ('crontab -e').",
        options: [lineageToRemove, .json]
    ) { invocation in
        let lineage = try invocation.arguments.required(lineageToRemove).name
        let removal = try ScheduleService.remove(lineage: lineage) { Console.error("warning: \($0)") }
        let (directory, removed, disabled, systemdProblem) = (removal.directory, removal.removed, removal.disabled, removal.systemdProblem)
        if invocation.arguments[.json] {
            Console.print(JSON.pretty(RemoveReport(lineage: lineage, removed: removed.map(\.path), disabled: disabled)))
            return
        }
        if removed.isEmpty {
            Console.print("no schedule was installed for lineage \(lineage) in \(directory.path)")
        } else {
            for url in removed { Console.print("removed \(url.path)") }
            if let systemdProblem { Console.error("systemd: \(systemdProblem); nothing to disable") }
        }
        Console.print("# if you added the cron line instead, delete it with 'crontab -e'")
    }

    static let status = Command(
        "schedule status", summary: "say when a lineage's nightly timer fires next, and whether it can fire while you are logged out",
        discussion: "Reads the timer file's time of day and asks 'systemctl --user show' for the timer's state and next elapse. "
            + "A user timer does not fire while its user is logged out unless lingering is on ('loginctl enable-linger'); "
            + "when 'loginctl show-user' says it is off, a warning says so on stderr. Exit 1 when no timer is installed.",
        options: [lineageToShow, .json]
    ) { invocation in
        let lineage = try invocation.arguments.required(lineageToShow).name
        let user = ProcessInfo.processInfo.environment["USER"] ?? NSUserName()
        let status = ScheduleService.status(lineage: lineage, user: user)
        if invocation.arguments[.json] {
            Console.print(JSON.pretty(status))
        } else if status.installed {
            Console.print("timer: \(status.timerPath)")
            Console.print("runs every day at \(status.at ?? "?") (local time); next: \(status.nextRun.map(localTime) ?? "unknown")")
            if let state = status.timerState {
                Console.print("systemd: timer \(state)" + (status.systemdNextElapse.map { ", next elapse \($0)" } ?? ", no next elapse (not enabled?)"))
            }
        } else {
            Console.print("no timer is installed for lineage \(lineage) (\(status.timerPath)); 'adapt schedule install --lineage \(lineage) --at HH:MM' makes one")
        }
        if let problem = status.systemdProblem { Console.error("systemd: \(problem)") }
        switch status.lingering {
        case "off":
            Console.error("adapt: warning: lingering is off for user \(user): the timer does not fire while \(user) is logged out. "
                          + "Turn it on with 'loginctl enable-linger \(user)'")
        case "unknown":
            Console.error("adapt: note: cannot tell whether lingering is on (\(status.lingeringProblem ?? "")); without it the timer "
                          + "fires only while you are logged in")
        default: break
        }
        if !status.installed { throw ExitCode.failure }
    }

    /// `2026-12-03 02:30 +0100`: a next run as the person reading it keeps time.
    static func localTime(_ milliseconds: Int64) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = .current
        formatter.dateFormat = "yyyy-MM-dd HH:mm xx"
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    static let lineageToShow = Option(lineage: "the lineage whose timer to describe")
    static let lineageToRun = Option(lineage: "the lineage to run (letters, digits, '-', '_')")
    static let lineageToRemove = Option(lineage: "the lineage whose schedule to remove")
    static let at = Option<TimeOfDay?>("at", value: "HH:MM", default: nil, help: "local time of day to start, e.g. 02:00") {
        try TimeOfDay(parsing: $0)
    }
    static let pipeline = Option<String?>("pipeline", value: "FILE", help: "a pipeline file (default: the built-in nightly pipeline)")
    static let dryRun = Flag("dry-run", help: "print the unit files and the cron line; write and enable nothing")

    /// The absolute path of the running `adapt`, which the units run (so an installed binary moved later needs a
    /// reinstall, and says so by failing visibly in the journal).
    static func executablePath() -> String {
        if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"), target.hasPrefix("/") {
            return target
        }
        return (Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])).standardizedFileURL.path
    }

    struct InstallReport: Encodable {
        let lineage: String
        let at: String
        let timerPath: String
        let servicePath: String
        let timer: String
        let service: String
        let cronLine: String
        let dryRun: Bool
        let written: Bool
        let enabled: Bool
        let systemdUnavailable: String?

        enum CodingKeys: String, CodingKey {
            case lineage, at, timer, service, written, enabled
            case timerPath = "timer_path", servicePath = "service_path", cronLine = "cron_line", dryRun = "dry_run"
            case systemdUnavailable = "systemd_unavailable"
        }

        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(lineage, forKey: .lineage)
            try c.encode(at, forKey: .at)
            try c.encode(timerPath, forKey: .timerPath)
            try c.encode(servicePath, forKey: .servicePath)
            try c.encode(timer, forKey: .timer)
            try c.encode(service, forKey: .service)
            try c.encode(cronLine, forKey: .cronLine)
            try c.encode(dryRun, forKey: .dryRun)
            try c.encode(written, forKey: .written)
            try c.encode(enabled, forKey: .enabled)
            if let systemdUnavailable { try c.encode(systemdUnavailable, forKey: .systemdUnavailable) }
            else { try c.encodeNil(forKey: .systemdUnavailable) }
        }
    }

    struct RemoveReport: Encodable {
        let lineage: String
        let removed: [String]
        let disabled: Bool
    }
}
