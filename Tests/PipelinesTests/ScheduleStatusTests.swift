import Foundation
import Testing
import TestSupport

/// `adapt schedule status`: when the timer fires next, what systemd says, and a warning when lingering is off.
/// Stand-ins for systemctl and loginctl answer as the real ones do, so no test reaches the user's managers.
struct ScheduleStatusSandbox {
    let sandbox: ScheduleSandbox
    var fakeLoginctl: URL { sandbox.directory.file("loginctl") }

    /// `linger` is what loginctl says (`yes`/`no`), nil: loginctl fails.
    init(linger: String?) throws {
        sandbox = try ScheduleSandbox()
        // The installed stand-in records calls; this one also answers `show` as systemctl does.
        let systemctl = """
            #!/bin/sh
            echo "$*" >> '\(sandbox.log.path)'
            case "$*" in *" show "*) printf 'ActiveState=active\\nNextElapseUSecRealtime=Thu 2026-12-03 02:30:00 UTC\\n';; esac
            exit 0

            """
        try Data(systemctl.utf8).write(to: sandbox.fakeSystemctl)
        let loginctl = linger.map { "#!/bin/sh\necho \"$*\" >> '\(sandbox.log.path)'\necho Linger=\($0)\n" } ?? "#!/bin/sh\nexit 1\n"
        try Data(loginctl.utf8).write(to: fakeLoginctl)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: fakeLoginctl.path)
    }

    func adapt(_ arguments: [String]) throws -> ProcessResult {
        try Executables.run("adapt", ["--state", sandbox.directory.file("state").path] + arguments,
                            environment: sandbox.environment.merging(["ADAPT_LOGINCTL": fakeLoginctl.path, "USER": "river"]) { $1 })
    }
}

@Test func statusSaysWhenTheTimerFiresNextAndWarnsWhenLingeringIsOff() throws {
    let box = try ScheduleStatusSandbox(linger: "no")
    #expect(try box.adapt(["schedule", "install", "--lineage", "mail", "--at", "02:30"]).status == 0)
    let result = try box.adapt(["schedule", "status", "--lineage", "mail"])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout.contains("runs every day at 02:30 (local time); next: "))
    #expect(result.stdout.contains("systemd: timer active, next elapse Thu 2026-12-03 02:30:00 UTC"))
    #expect(result.stderr.contains("warning: lingering is off for user river"))
    #expect(result.stderr.contains("loginctl enable-linger river"))
    #expect(box.sandbox.systemctlCalls.contains("--user show adapt-nightly-mail.timer --property=ActiveState --property=NextElapseUSecRealtime"))
    #expect(box.sandbox.systemctlCalls.contains("show-user river --property=Linger"))

    let json = try box.adapt(["schedule", "status", "--lineage", "mail", "--json"])
    #expect(json.status == 0)
    let status = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
    #expect(status?["lingering"] as? String == "off")
    #expect(status?["at"] as? String == "02:30")
    #expect(status?["installed"] as? Bool == true)
    #expect(status?["systemd_next_elapse"] as? String == "Thu 2026-12-03 02:30:00 UTC")
    // The computed next run is the next 02:30 local time, within a day from now.
    let next = try #require(status?["next_run"] as? String)
    let date = try #require(ISO8601DateFormatter().date(from: next.replacingOccurrences(of: #"\.\d+"#, with: "", options: .regularExpression)))
    #expect(date > Date() && date.timeIntervalSinceNow <= 86_400 + 60)
}

@Test func statusIsQuietAboutLingeringWhenItIsOn() throws {
    let box = try ScheduleStatusSandbox(linger: "yes")
    #expect(try box.adapt(["schedule", "install", "--lineage", "mail", "--at", "02:30"]).status == 0)
    let result = try box.adapt(["schedule", "status", "--lineage", "mail"])
    #expect(result.status == 0)
    #expect(!result.stderr.contains("lingering"))
}

@Test func statusOfALineageWithoutATimerSaysHowToMakeOne() throws {
    let box = try ScheduleStatusSandbox(linger: nil)
    let result = try box.adapt(["schedule", "status", "--lineage", "mail"])
    #expect(result.status == 1)
    #expect(result.stdout.contains("no timer is installed for lineage mail"))
    #expect(result.stdout.contains("adapt schedule install --lineage mail --at HH:MM"))
    #expect(result.stderr.contains("cannot tell whether lingering is on"))
}
