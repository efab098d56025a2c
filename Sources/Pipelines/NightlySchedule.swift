import AdaptCore
import Foundation
import AdaptCore

/// The systemd user timer and service that enqueue a lineage's nightly run and work it off, and the
/// equivalent crontab line for machines without systemd.
///
/// The timer is the Linux counterpart of a background processing task: `Persistent=true` runs a missed night
/// at the next boot (systemd.timer(5)), and the service runs at low CPU and I/O priority.
public struct NightlySchedule: Sendable, Equatable {
    public let lineage: String
    public let time: TimeOfDay
    /// Absolute path of the `adapt` executable the units run.
    public let executable: String
    /// Absolute state directory, passed as `--state` so the units never depend on a working directory.
    public let stateDirectory: String
    /// Absolute path of a pipeline file, or nil for the built-in nightly pipeline.
    public let pipeline: String?

    /// Throws `PipelineError.invalidLineage`, or `.controlCharacterInSchedule` for a path holding a control
    /// character; paths must be absolute (a precondition: the command makes them so).
    public init(lineage: String, time: TimeOfDay, executable: String, stateDirectory: String, pipeline: String? = nil) throws {
        try PipelineError.validate(lineage: lineage)
        try Self.requireNoControlCharacters(executable, field: "adapt executable's path")
        try Self.requireNoControlCharacters(stateDirectory, field: "state directory")
        if let pipeline { try Self.requireNoControlCharacters(pipeline, field: "pipeline path") }
        precondition(executable.hasPrefix("/") && stateDirectory.hasPrefix("/") && (pipeline?.hasPrefix("/") ?? true),
                     "NightlySchedule needs absolute paths")
        self.lineage = lineage
        self.time = time
        self.executable = executable
        self.stateDirectory = stateDirectory
        self.pipeline = pipeline
    }

    /// Unit files and crontabs are line-based and neither has a way to quote a newline inside a word: a newline
    /// in a path would end ExecStart= and start a line of the path's choosing. No quoting makes C0, DEL or C1
    /// controls safe there, so they are refused rather than escaped.
    public static func requireNoControlCharacters(_ value: String, field: String) throws {
        if value.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) {
            throw PipelineError.controlCharacterInSchedule(field: field)
        }
    }

    /// `adapt-nightly-<lineage>`
    public static func unitBaseName(lineage: String) -> String { "adapt-nightly-\(lineage)" }
    public var unitBaseName: String { Self.unitBaseName(lineage: lineage) }
    public var timerName: String { unitBaseName + ".timer" }
    public var serviceName: String { unitBaseName + ".service" }

    /// `$XDG_CONFIG_HOME/systemd/user`, or `~/.config/systemd/user` when XDG_CONFIG_HOME is unset, empty or
    /// relative (the XDG Base Directory specification says relative values are to be ignored).
    public static func unitDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            return URL(fileURLWithPath: config).appendingPathComponent("systemd/user")
        }
        let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? NSHomeDirectory()
        return URL(fileURLWithPath: home).appendingPathComponent(".config/systemd/user")
    }

    /// The two commands the schedule runs, as argument vectors.
    public var commands: [[String]] {
        var enqueue = [executable, "--state", stateDirectory, "enqueue", "nightly", "--lineage", lineage]
        if let pipeline { enqueue += ["--pipeline", pipeline] }
        return [enqueue, [executable, "--state", stateDirectory, "work", "--exit-when-idle"]]
    }

    public var timerUnit: String {
        """
        [Unit]
        Description=Adapt nightly run for lineage \(lineage)

        [Timer]
        OnCalendar=*-*-* \(time):00
        Persistent=true
        Unit=\(serviceName)

        [Install]
        WantedBy=timers.target

        """
    }

    /// A oneshot service runs its ExecStart lines in order and stops at the first that fails
    /// (systemd.service(5)), which is exactly "enqueue, then work until idle". Its stdout and stderr go to the
    /// journal (systemd's default), tagged with the unit's name: `adapt work` prints each run's outcome there.
    public var serviceUnit: String {
        """
        [Unit]
        Description=Adapt nightly run for lineage \(lineage): enqueue, then work until idle

        [Service]
        Type=oneshot
        \(commands.map { "ExecStart=" + $0.map(Self.systemdQuoted).joined(separator: " ") }.joined(separator: "\n"))
        Nice=10
        IOSchedulingClass=idle
        SyslogIdentifier=\(unitBaseName)

        """
    }

    /// The crontab line for systems without systemd; cron starts the commands with /bin/sh.
    public var cronLine: String {
        let script = commands.map { $0.map(Self.shellQuoted).joined(separator: " ") }.joined(separator: " && ")
        // In a crontab an unescaped % ends the command (crontab(5)).
        return "\(time.minute) \(time.hour) * * * " + script.replacingOccurrences(of: "%", with: "\\%")
    }

    /// One word of an ExecStart line: `%` and `$` are escaped as systemd.service(5) asks, and a word with
    /// spaces, quotes or backslashes is double-quoted with C-style escapes.
    static func systemdQuoted(_ word: String) -> String {
        var escaped = word.replacingOccurrences(of: "%", with: "%%").replacingOccurrences(of: "$", with: "$$")
        guard escaped.contains(where: { " \t\"'\\;".contains($0) }) else { return escaped }
        escaped = escaped.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return "\"\(escaped)\""
    }

    /// POSIX shell single quoting.
    static func shellQuoted(_ word: String) -> String {
        let safe = word.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "/._-+:=@,".contains($0)) }
        return safe && !word.isEmpty ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    // MARK: Files

    public struct InstalledFiles: Sendable, Equatable {
        public let timer: URL
        public let service: URL
    }

    public func files(in directory: URL) -> InstalledFiles {
        InstalledFiles(timer: directory.appendingPathComponent(timerName), service: directory.appendingPathComponent(serviceName))
    }

    /// Writes both unit files atomically into `directory`, creating it if needed.
    @discardableResult
    public func write(to directory: URL) throws -> InstalledFiles {
        let files = files(in: directory)
        do {
            try PrivateFiles.createDirectory(directory)
        } catch {
            throw PipelineError.unitUnwritable(path: directory.path, reason: "cannot create the directory")
        }
        for (url, text) in [(files.service, serviceUnit), (files.timer, timerUnit)] {
            // Not `Data.write(options: .atomic)`: on Linux, Foundation leaves an empty directory in /tmp per write.
            // AtomicFile never writes through a symbolic link: one planted at a unit's path is refused, and what
            // it names is left as it was.
            do { try AtomicFile.write(Data(text.utf8), to: url) } catch let CoreError.fileUnwritable(_, reason) {
                throw PipelineError.unitUnwritable(path: url.path, reason: reason)
            } catch {
                throw PipelineError.unitUnwritable(path: url.path, reason: "the write failed")
            }
        }
        return files
    }

    /// Deletes a lineage's unit files from `directory`; returns the ones that existed.
    public static func removeFiles(lineage: String, from directory: URL) throws -> [URL] {
        try PipelineError.validate(lineage: lineage)
        var removed: [URL] = []
        for suffix in [".timer", ".service"] {
            let url = directory.appendingPathComponent(unitBaseName(lineage: lineage) + suffix)
            guard FileManager.default.fileExists(atPath: url.path) else { continue }
            do { try FileManager.default.removeItem(at: url) } catch {
                throw PipelineError.unitUnwritable(path: url.path, reason: "it cannot be removed")
            }
            removed.append(url)
        }
        return removed
    }
}
