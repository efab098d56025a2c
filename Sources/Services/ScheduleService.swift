import Foundation
import Pipelines

/// `adapt schedule install|remove`: a systemd user timer per lineage, and the cron line for everyone else.
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
