import AdaptCore
import Foundation
import Pipelines

/// `adapt schedule install|remove|status`: a systemd user timer per lineage, and the cron line for everyone else.
public enum ScheduleService {
    /// Throws `PipelineError` when `value` (a path that goes verbatim into the unit files) holds a control character.
    public static func requireNoControlCharacters(_ value: String, field: String) throws {
        try NightlySchedule.requireNoControlCharacters(value, field: field)
    }

    /// What installing did.
    public struct Installation {
        public let schedule: NightlySchedule
        public let files: NightlySchedule.InstalledFiles
        /// The timer is enabled and started.
        public let enabled: Bool
        /// Why no user service manager could be asked (nil: one was).
        public let systemdProblem: String?
        /// Enabling failed: reported after the cron line, so the user still has a way to schedule the run.
        public let enableFailure: (any Error)?
    }

    /// Writes the timer and service units for `schedule` and enables them when a user service manager is
    /// available; with `dryRun`, writes and enables nothing.
    public static func install(_ schedule: NightlySchedule, dryRun: Bool) throws -> Installation {
        let directory = NightlySchedule.unitDirectory()
        let files = schedule.files(in: directory)
        var enabled = false
        var systemdProblem: String?
        var enableFailure: (any Error)?
        if !dryRun {
            try schedule.write(to: directory)
            let systemctl = Systemctl.resolve()
            systemdProblem = systemctl.unavailableReason()
            if systemdProblem == nil {
                do {
                    try systemctl.user(["daemon-reload"])
                    try systemctl.user(["enable", "--now", schedule.timerName])
                    enabled = true
                } catch {
                    enableFailure = error
                }
            }
        }
        return Installation(schedule: schedule, files: files, enabled: enabled, systemdProblem: systemdProblem,
                            enableFailure: enableFailure)
    }

    /// What removing did.
    public struct Removal: Sendable {
        public let directory: URL
        public let removed: [URL]
        public let disabled: Bool
        public let systemdProblem: String?
    }

    /// Disables `lineage`'s timer (when a user service manager is available), deletes both unit files and
    /// reloads; a failure to disable is handed to `warn` and the files are deleted anyway.
    public static func remove(lineage: String, warn: (any Error) -> Void) throws -> Removal {
        let directory = NightlySchedule.unitDirectory()
        let base = NightlySchedule.unitBaseName(lineage: lineage)
        let existed = FileManager.default.fileExists(atPath: directory.appendingPathComponent(base + ".timer").path)
        let systemctl = Systemctl.resolve()
        let systemdProblem = systemctl.unavailableReason()
        var disabled = false
        if existed, systemdProblem == nil {
            do {
                try systemctl.user(["disable", "--now", base + ".timer"])
                disabled = true
            } catch {
                warn(error)
            }
        }
        let removed = try NightlySchedule.removeFiles(lineage: lineage, from: directory)
        if !removed.isEmpty, systemdProblem == nil { try systemctl.user(["daemon-reload"]) }
        return Removal(directory: directory, removed: removed, disabled: disabled, systemdProblem: systemdProblem)
    }
}

extension ScheduleService {
    /// What `schedule status` reports about a lineage's timer.
    public struct Status: Sendable, Encodable {
        public let lineage: String
        public let installed: Bool
        public let timerPath: String
        /// The time of day of the timer file's `OnCalendar=`.
        public let at: String?
        /// The next time that time of day comes, in milliseconds since the epoch (computed here, local time).
        public let nextRun: Int64?
        /// What systemd says: the timer's `ActiveState` and `NextElapseUSecRealtime` (nil: not asked or not answered).
        public let timerState: String?
        public let systemdNextElapse: String?
        public let systemdProblem: String?
        /// `on`, `off` or `unknown`.
        public let lingering: String
        public let lingeringProblem: String?

        enum CodingKeys: String, CodingKey {
            case lineage, installed, at, lingering
            case timerPath = "timer_path", nextRun = "next_run", timerState = "timer_state"
            case systemdNextElapse = "systemd_next_elapse", systemdProblem = "systemd_problem", lingeringProblem = "lingering_problem"
        }

        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(lineage, forKey: .lineage)
            try c.encode(installed, forKey: .installed)
            try c.encode(timerPath, forKey: .timerPath)
            try c.encode(at, forKey: .at)
            try c.encode(nextRun.map(Timestamp.iso8601), forKey: .nextRun)
            try c.encode(timerState, forKey: .timerState)
            try c.encode(systemdNextElapse, forKey: .systemdNextElapse)
            try c.encode(systemdProblem, forKey: .systemdProblem)
            try c.encode(lingering, forKey: .lingering)
            try c.encode(lingeringProblem, forKey: .lingeringProblem)
        }
    }

    /// The lineage's timer as its file, systemd and logind describe it; `now` places the next run.
    public static func status(lineage: String, user: String, now: Date = Date()) -> Status {
        let directory = NightlySchedule.unitDirectory()
        let base = NightlySchedule.unitBaseName(lineage: lineage)
        let timer = directory.appendingPathComponent(base + ".timer")
        let text = try? String(contentsOf: timer, encoding: .utf8)
        // `OnCalendar=*-*-* HH:MM:00`, as `NightlySchedule.timerUnit` writes it.
        let time = text?.split(separator: "\n").first { $0.hasPrefix("OnCalendar=*-*-* ") }
            .flatMap { try? TimeOfDay(parsing: String($0.dropFirst("OnCalendar=*-*-* ".count).dropLast(3))) }
        var timerState: String?, nextElapse: String?, systemdProblem: String?
        if text != nil {
            let systemctl = Systemctl.resolve()
            systemdProblem = systemctl.unavailableReason()
            if systemdProblem == nil {
                do {
                    let properties = try systemctl.properties(of: base + ".timer", ["ActiveState", "NextElapseUSecRealtime"])
                    timerState = properties["ActiveState"]
                    nextElapse = properties["NextElapseUSecRealtime"].flatMap { $0.isEmpty ? nil : $0 }
                } catch {
                    systemdProblem = "\(error)"
                }
            }
        }
        let lingering = Lingering.check(user: user)
        let (word, problem): (String, String?) = switch lingering {
        case .on: ("on", nil)
        case .off: ("off", nil)
        case let .unknown(why): ("unknown", why)
        }
        return Status(lineage: lineage, installed: text != nil, timerPath: timer.path, at: time?.description,
                      nextRun: time.map { next($0, after: now) }, timerState: timerState, systemdNextElapse: nextElapse,
                      systemdProblem: systemdProblem, lingering: word, lingeringProblem: problem)
    }

    /// The next local time showing `time` after `now`, in milliseconds since the epoch.
    static func next(_ time: TimeOfDay, after now: Date) -> Int64 {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .current
        let next = calendar.nextDate(after: now, matching: DateComponents(hour: time.hour, minute: time.minute, second: 0),
                                     matchingPolicy: .nextTime) ?? now
        return Int64(next.timeIntervalSince1970 * 1000)
    }
}
