import Foundation

/// Whether systemd keeps the user's service manager running while the user is logged out ("lingering",
/// loginctl(1)): without it a user timer does not fire at night unless someone is logged in.
///
/// Asked through `loginctl show-user USER --property=Linger`; the program is `ADAPT_LOGINCTL` when set (tests point
/// it at a script; empty means "no loginctl"), else `loginctl` on PATH.
public enum Lingering: Sendable, Equatable {
    case on
    case off
    /// Nobody could be asked: why.
    case unknown(String)

    public static func check(user: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> Lingering {
        let program: URL?
        if let override = environment["ADAPT_LOGINCTL"] {
            program = override.isEmpty ? nil : URL(fileURLWithPath: override)
        } else {
            program = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
                .map { URL(fileURLWithPath: String($0)).appendingPathComponent("loginctl") }
                .first { FileManager.default.isExecutableFile(atPath: $0.path) }
        }
        guard let program else { return .unknown("loginctl is not installed") }
        let (status, output) = Systemctl.execute(program, ["show-user", user, "--property=Linger"])
        guard status == 0 else { return .unknown("loginctl show-user \(user) failed (exit \(status))") }
        if output.contains("Linger=yes") { return .on }
        if output.contains("Linger=no") { return .off }
        return .unknown("loginctl did not say whether lingering is on")
    }
}
