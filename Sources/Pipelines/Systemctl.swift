import Foundation

/// Runs `systemctl --user …`, or says it cannot.
///
/// Which program is run is a parameter: the command line uses `ADAPT_SYSTEMCTL` when it is set (tests point
/// it at a recording script, so no test ever touches the real user's systemd) and `systemctl` on PATH otherwise.
public struct Systemctl: Sendable {
    public let executable: URL?

    public init(executable: URL?) { self.executable = executable }

    /// `ADAPT_SYSTEMCTL` if set (an empty value means "no systemctl"), else the first `systemctl` on PATH.
    public static func resolve(environment: [String: String] = ProcessInfo.processInfo.environment) -> Systemctl {
        if let override = environment["ADAPT_SYSTEMCTL"] {
            return Systemctl(executable: override.isEmpty ? nil : URL(fileURLWithPath: override))
        }
        for directory in (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent("systemctl")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return Systemctl(executable: candidate) }
        }
        return Systemctl(executable: nil)
    }

    /// Nil when the user manager answers; otherwise why it cannot be used (no systemctl, no user session bus).
    public func unavailableReason() -> String? {
        guard let executable else { return "systemctl is not installed" }
        guard FileManager.default.isExecutableFile(atPath: executable.path) else {
            return "\(executable.path) is not an executable"
        }
        let (status, _) = Self.execute(executable, ["--user", "show-environment"])
        return status == 0 ? nil : "systemctl --user cannot reach a user service manager (no systemd user session)"
    }

    /// Runs `systemctl --user <arguments>`; throws `PipelineError.systemctlFailed` on a non-zero exit.
    public func user(_ arguments: [String]) throws {
        guard let executable else {
            throw PipelineError.systemctlFailed(arguments: ["--user"] + arguments, status: 127, output: "systemctl not found")
        }
        let (status, output) = Self.execute(executable, ["--user"] + arguments)
        guard status == 0 else { throw PipelineError.systemctlFailed(arguments: ["--user"] + arguments, status: status, output: output) }
    }

    /// `systemctl --user show UNIT -p P …` as a dictionary; throws `PipelineError.systemctlFailed` on a non-zero exit.
    public func properties(of unit: String, _ names: [String]) throws -> [String: String] {
        guard let executable else {
            throw PipelineError.systemctlFailed(arguments: ["--user", "show", unit], status: 127, output: "systemctl not found")
        }
        let arguments = ["--user", "show", unit] + names.map { "--property=\($0)" }
        let (status, output) = Self.execute(executable, arguments)
        guard status == 0 else { throw PipelineError.systemctlFailed(arguments: arguments, status: status, output: output) }
        var found: [String: String] = [:]
        for line in output.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            found[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return found
    }

    static func execute(_ executable: URL, _ arguments: [String]) -> (Int32, String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { return (127, "cannot start \(executable.path)") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
