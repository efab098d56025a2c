import AdaptCore
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `adapt doctor` on broken setups, run as a process: each problem is reported with its fix and exits 1; a
/// setup a night can run on exits 0. The user's systemd and login state are never read: XDG_CONFIG_HOME is a
/// temporary directory and systemctl and loginctl are scripts that answer for the system (ADAPT_SYSTEMCTL,
/// ADAPT_LOGINCTL).
@Suite(.serialized) struct DoctorTests {
    struct Checked {
        let status: Int32
        let checks: [String: (status: String, detail: String, fix: String?)]
        let nightCanRun: Bool
    }

    /// A state a night can run on: private, with the default model (a link to the checkout's) and a database.
    static func healthyState(in directory: TemporaryDirectory, root: URL? = nil) throws -> URL {
        let state = root ?? directory.url.appendingPathComponent("state")
        let created = try Executables.run("adapt", ["--state", state.path, "data", "policy", "--lineage", "mail", "--held-out-fraction", "0"])
        #expect(created.status == 0, "\(created.stderr)")
        let models = state.appendingPathComponent("models")
        try FileManager.default.createDirectory(at: models, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: models.appendingPathComponent(DefaultModel.fileName), withDestinationURL: CheckoutModel.url)
        return state
    }

    /// A program that prints `output` and exits 0, standing in for systemctl or loginctl.
    static func fake(_ name: String, in directory: TemporaryDirectory, printing output: String) throws -> URL {
        let url = directory.file(name)
        try "#!/bin/sh\nprintf '%s\\n' '\(output)'\n".write(to: url, atomically: true, encoding: .utf8)
        chmod(url.path, 0o755)
        return url
    }

    static func doctor(_ state: URL, in directory: TemporaryDirectory, environment: [String: String] = [:]) throws -> Checked {
        let config = directory.url.appendingPathComponent("config")
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        var env = ["XDG_CONFIG_HOME": config.path, "ADAPT_SYSTEMCTL": "", "ADAPT_LOGINCTL": ""]
        env.merge(environment) { $1 }
        let result = try Executables.run("adapt", ["--state", state.path, "doctor", "--json"], environment: env)
        let document = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        var checks: [String: (String, String, String?)] = [:]
        for check in document?["checks"] as? [[String: Any]] ?? [] {
            checks[check["name"] as? String ?? ""] = (check["status"] as? String ?? "", check["detail"] as? String ?? "",
                                                      check["fix"] as? String)
        }
        return Checked(status: result.status, checks: checks, nightCanRun: document?["night_can_run"] as? Bool ?? false)
    }

    @Test(.enabled(if: CheckoutModel.isPresent)) func healthySetupCanRunANight() throws {
        let directory = TemporaryDirectory()
        let result = try Self.doctor(try Self.healthyState(in: directory), in: directory)
        #expect(result.status == 0)
        #expect(result.nightCanRun)
        for name in ["state_directory", "disk_space", "model", "libraries", "cpu", "workers", "database", "last_run"] {
            #expect(result.checks[name]?.status == "ok", "\(name): \(String(describing: result.checks[name]))")
        }
        // The kernels a night's products would run on are named, as its manifest records them.
        let cpu = result.checks["cpu"]?.detail ?? ""
        #expect(cpu.contains("decode kernels int8-"), "\(cpu)")
        #expect(cpu.contains("prompt kernels int8-v1") || cpu.contains("prompt kernels sgemm"), "\(cpu)")
        // No timer: a warning with the command that installs one, not a failure.
        #expect(result.checks["timer"]?.status == "warning")
        #expect(result.checks["timer"]?.fix?.contains("schedule install") == true)
    }

    @Test(.enabled(if: CheckoutModel.isPresent)) func missingModelIsAnErrorWithItsFix() throws {
        let directory = TemporaryDirectory()
        let state = try Self.healthyState(in: directory)
        try FileManager.default.removeItem(at: state.appendingPathComponent("models").appendingPathComponent(DefaultModel.fileName))
        let result = try Self.doctor(state, in: directory)
        #expect(result.status == 1)
        #expect(!result.nightCanRun)
        #expect(result.checks["model"]?.status == "error")
        #expect(result.checks["model"]?.detail.contains("missing") == true)
        #expect(result.checks["model"]?.fix?.contains("scripts/fetch-model") == true)
    }

    @Test(.enabled(if: CheckoutModel.isPresent)) func modelWithAnotherDigestIsAnError() throws {
        let directory = TemporaryDirectory()
        let state = try Self.healthyState(in: directory)
        let model = state.appendingPathComponent("models").appendingPathComponent(DefaultModel.fileName)
        try FileManager.default.removeItem(at: model)
        try Data(try Data(contentsOf: CheckoutModel.url).prefix(1 << 20)).write(to: model)  // a partial download
        let result = try Self.doctor(state, in: directory)
        #expect(result.status == 1)
        #expect(result.checks["model"]?.status == "error")
        #expect(result.checks["model"]?.detail.contains("SHA-256") == true)
    }

    @Test(.enabled(if: CheckoutModel.isPresent)) func stateReadableByOthersIsAnErrorAndIsLeftAsItIs() throws {
        let directory = TemporaryDirectory()
        let state = try Self.healthyState(in: directory)
        chmod(state.path, 0o755)
        let result = try Self.doctor(state, in: directory)
        #expect(result.status == 1)
        #expect(result.checks["state_directory"]?.status == "error")
        #expect(result.checks["state_directory"]?.detail.contains("0755") == true)
        #expect(result.checks["state_directory"]?.fix?.contains("chmod 700") == true)
        // Doctor looks; it does not change the state (a writing command would tighten it).
        let mode = (try FileManager.default.attributesOfItem(atPath: state.path)[.posixPermissions] as? Int) ?? 0
        #expect(mode == 0o755)
    }

    @Test(.enabled(if: CheckoutModel.isPresent)) func timerWithoutLingeringIsAnError() throws {
        let directory = TemporaryDirectory()
        let state = try Self.healthyState(in: directory)
        let config = directory.url.appendingPathComponent("config")
        // The units `adapt schedule install` writes, without enabling them (no systemctl).
        let install = try Executables.run("adapt", ["--state", state.path, "schedule", "install", "--at", "02:30", "--lineage", "mail"],
                                          environment: ["XDG_CONFIG_HOME": config.path, "ADAPT_SYSTEMCTL": ""])
        #expect(install.status == 0, "\(install.stderr)")
        let systemctl = try Self.fake("systemctl", in: directory,
                                      printing: "ActiveState=active\nNextElapseUSecRealtime=Thu 2026-12-03 02:30:00 UTC")
        let environment = ["ADAPT_SYSTEMCTL": systemctl.path]
        let lingering = try Self.fake("loginctl-yes", in: directory, printing: "yes")
        let good = try Self.doctor(state, in: directory, environment: environment.merging(["ADAPT_LOGINCTL": lingering.path]) { $1 })
        #expect(good.status == 0)
        #expect(good.checks["timer"]?.status == "ok")
        #expect(good.checks["timer"]?.detail.contains("2026-12-03 02:30") == true)
        #expect(good.checks["lingering"]?.status == "ok")

        let notLingering = try Self.fake("loginctl-no", in: directory, printing: "no")
        let bad = try Self.doctor(state, in: directory, environment: environment.merging(["ADAPT_LOGINCTL": notLingering.path]) { $1 })
        #expect(bad.status == 1)
        #expect(bad.checks["lingering"]?.status == "error")
        #expect(bad.checks["lingering"]?.fix?.contains("loginctl enable-linger") == true)
    }

    @Test(.enabled(if: CheckoutModel.isPresent)) func inactiveTimerIsAnError() throws {
        let directory = TemporaryDirectory()
        let state = try Self.healthyState(in: directory)
        let config = directory.url.appendingPathComponent("config")
        _ = try Executables.run("adapt", ["--state", state.path, "schedule", "install", "--at", "02:30", "--lineage", "mail"],
                                environment: ["XDG_CONFIG_HOME": config.path, "ADAPT_SYSTEMCTL": ""])
        let systemctl = try Self.fake("systemctl", in: directory, printing: "ActiveState=inactive\nNextElapseUSecRealtime=")
        let loginctl = try Self.fake("loginctl", in: directory, printing: "yes")
        let result = try Self.doctor(state, in: directory, environment: ["ADAPT_SYSTEMCTL": systemctl.path, "ADAPT_LOGINCTL": loginctl.path])
        #expect(result.status == 1)
        #expect(result.checks["timer"]?.status == "error")
        #expect(result.checks["timer"]?.fix?.contains("enable --now adapt-nightly-mail.timer") == true)
    }

    @Test(.enabled(if: CheckoutModel.isPresent)) func corruptDatabaseIsReported() throws {
        let directory = TemporaryDirectory()
        let state = try Self.healthyState(in: directory)
        let database = state.appendingPathComponent("adapt.sqlite")
        // Fold the WAL in, then overwrite pages past the header: SQLite opens the file, quick_check finds the damage.
        _ = try Executables.run(executableAt: URL(fileURLWithPath: "/usr/bin/sqlite3"), [database.path, "PRAGMA wal_checkpoint(TRUNCATE);"])
        let handle = try FileHandle(forUpdating: database)
        let size = try handle.seekToEnd()
        #expect(size > 8192)
        try handle.seek(toOffset: 2048)
        try handle.write(contentsOf: Data(repeating: 0xA5, count: Int(size) - 4096))
        try handle.close()
        let result = try Self.doctor(state, in: directory)
        #expect(result.status == 1)
        #expect(result.checks["database"]?.status == "error")
        #expect(result.checks["database"]?.fix?.contains(".recover") == true)
    }

    @Test(.enabled(if: CheckoutModel.isPresent)) func fileThatIsNotADatabaseIsReported() throws {
        let directory = TemporaryDirectory()
        let state = try Self.healthyState(in: directory)
        let database = state.appendingPathComponent("adapt.sqlite")
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database.path + suffix) }
        try Data(repeating: 0x41, count: 4096).write(to: database)
        let result = try Self.doctor(state, in: directory)
        #expect(result.status == 1)
        #expect(result.checks["database"]?.status == "error")
    }

    /// A full disk, simulated with a 4 MiB tmpfs (mounting needs root; the suite runs as root in CI and here).
    @Test(.enabled(if: CheckoutModel.isPresent && getuid() == 0)) func fullDiskIsReported() throws {
        let directory = TemporaryDirectory()
        let mount = directory.url.appendingPathComponent("small")
        try FileManager.default.createDirectory(at: mount, withIntermediateDirectories: true)
        let mounted = try Executables.run(executableAt: URL(fileURLWithPath: "/bin/mount"),
                                          ["-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", mount.path])
        try #require(mounted.status == 0, "mount: \(mounted.stderr)")
        defer { _ = try? Executables.run(executableAt: URL(fileURLWithPath: "/bin/umount"), [mount.path]) }
        let state = try Self.healthyState(in: directory, root: mount.appendingPathComponent("state"))
        let result = try Self.doctor(state, in: directory)
        #expect(result.status == 1)
        #expect(result.checks["disk_space"]?.status == "error")
        #expect(result.checks["disk_space"]?.detail.contains("a night needs 256 MiB") == true)
        #expect(result.checks["disk_space"]?.fix?.contains("adapt gc") == true)
        #expect(result.checks["state_directory"]?.status == "ok")
    }

    @Test func missingStateIsAnErrorAndIsNotCreated() throws {
        let directory = TemporaryDirectory()
        let state = directory.url.appendingPathComponent("nothing-here")
        let result = try Self.doctor(state, in: directory)
        #expect(result.status == 1)
        #expect(result.checks["state_directory"]?.status == "error")
        #expect(result.checks["state_directory"]?.fix?.contains("data import") == true)
        #expect(!FileManager.default.fileExists(atPath: state.path))
    }
}
