import Foundation
import Pipelines
#if canImport(Glibc)
import Glibc
#endif

/// The timer that starts a night unattended: installed for this state, active with a next firing, and the
/// user's lingering, without which a user timer does not fire while its user is logged out.
extension Doctor {
    static func timerChecks(_ setup: Setup) -> [Check] {
        let environment = setup.environment
        let directory = NightlySchedule.unitDirectory(environment: environment)
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
            .filter { $0.hasPrefix(NightlySchedule.unitBaseName(lineage: "")) && $0.hasSuffix(".timer") }
            .sorted()
        // A timer belongs to this state when its service passes this state's path as --state.
        let ownTimers = names.filter { name in
            let service = directory.appendingPathComponent(String(name.dropLast(".timer".count)) + ".service")
            guard let text = try? String(contentsOf: service, encoding: .utf8) else { return false }
            // ExecStart escapes % and $ (and quotes a path with spaces), so the path is looked for as written there.
            let written = setup.state.root.path.replacingOccurrences(of: "%", with: "%%").replacingOccurrences(of: "$", with: "$$")
            return text.contains(written)
        }
        let timers = ownTimers + packagedTimers(setup, config: directory)
        guard !timers.isEmpty else {
            return [Check("timer", .warning, "no nightly timer for this state in \(directory.path): nights run only when enqueued by hand",
                          fix: "adapt --state \(setup.state.root.path) schedule install --at 02:30 --lineage L")]
        }
        var checks: [Check] = []
        let systemctl = Host.program("systemctl", override: "ADAPT_SYSTEMCTL", environment: environment)
        for timer in timers {
            guard let systemctl,
                  let (status, output) = Host.run(systemctl, ["--user", "show", "--property=ActiveState,NextElapseUSecRealtime", timer]),
                  status == 0 else {
                checks.append(Check("timer", .warning, "\(timer) is installed; systemctl --user cannot say whether it is active",
                                    fix: "run doctor inside your login session, or check with: systemctl --user list-timers"))
                continue
            }
            let properties = Host.properties(output)
            let next = properties["NextElapseUSecRealtime"].flatMap { $0.isEmpty || $0 == "n/a" ? nil : $0 }
            if properties["ActiveState"] == "active" {
                checks.append(Check("timer", .ok, "\(timer) is active; next firing \(next ?? "not scheduled")"))
            } else {
                checks.append(Check("timer", .error, "\(timer) is installed but not active (\(properties["ActiveState"] ?? "unknown"))",
                                    fix: "systemctl --user daemon-reload && systemctl --user enable --now \(timer)"))
            }
        }
        checks.append(lingeringCheck(environment))
        return checks
    }

    /// Instances of the package's template (`adapt-nightly@LINEAGE.timer`, enabled into timers.target.wants), whose
    /// service uses the state `$XDG_STATE_HOME/adapt`: counted when that is the state examined.
    static func packagedTimers(_ setup: Setup, config: URL) -> [String] {
        let environment = setup.environment
        let stateHome = environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? ((environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? NSHomeDirectory()) + "/.local/state")
        guard URL(fileURLWithPath: stateHome).appendingPathComponent("adapt").standardizedFileURL.path == setup.state.root.path else { return [] }
        let wants = config.appendingPathComponent("timers.target.wants")
        return ((try? FileManager.default.contentsOfDirectory(atPath: wants.path)) ?? [])
            .filter { $0.hasPrefix("adapt-nightly@") && $0.hasSuffix(".timer") }.sorted()
    }

    static func lingeringCheck(_ environment: [String: String]) -> Check {
        let user = Host.userName()
        let fix = "loginctl enable-linger \(user) (the timer then fires while you are logged out)"
        guard let loginctl = Host.program("loginctl", override: "ADAPT_LOGINCTL", environment: environment),
              let (status, output) = Host.run(loginctl, ["show-user", user, "--property=Linger", "--value"]), status == 0 else {
            // No logind (a container, a system without systemd): the linger file is what logind would read.
            if FileManager.default.fileExists(atPath: "/var/lib/systemd/linger/\(user)") {
                return Check("lingering", .ok, "lingering is enabled for \(user)")
            }
            return Check("lingering", .warning, "loginctl cannot say whether \(user) lingers", fix: fix)
        }
        let answer = output.trimmingCharacters(in: .whitespacesAndNewlines)
        guard answer == "yes" else {
            return Check("lingering", .error, "lingering is off for \(user): the timer fires only while \(user) is logged in", fix: fix)
        }
        return Check("lingering", .ok, "lingering is enabled for \(user)")
    }
}

/// The host's programs doctor asks (systemctl, loginctl): which one runs is injectable through an environment
/// variable, so tests answer for the system and never read the real user's session.
enum Host {
    /// `environment[override]` when set (empty: none), else `name` on PATH.
    static func program(_ name: String, override: String, environment: [String: String]) -> URL? {
        if let path = environment[override] { return path.isEmpty ? nil : URL(fileURLWithPath: path) }
        for directory in (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }

    /// Exit status and standard output, or nil when the program cannot be started.
    static func run(_ executable: URL, _ arguments: [String]) -> (Int32, String)? {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// `KEY=value` lines, as `systemctl show` prints them.
    static func properties(_ text: String) -> [String: String] {
        var properties: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            properties[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return properties
    }

    /// This process's user name (from the password database, not $USER, which a shell may have changed).
    static func userName() -> String {
        if let entry = getpwuid(getuid()), let name = entry.pointee.pw_name { return String(cString: name) }
        return String(getuid())
    }
}
