import Foundation
import Pipelines
import Testing
import TestSupport

/// A temporary XDG_CONFIG_HOME and a recording stand-in for systemctl, so no test reaches the real user manager.
struct ScheduleSandbox {
    let directory = TemporaryDirectory("adapt-schedule")
    var config: URL { directory.file("config") }
    var units: URL { config.appendingPathComponent("systemd/user") }
    var log: URL { directory.file("systemctl.log") }
    var fakeSystemctl: URL { directory.file("systemctl") }

    /// `systemdUsable: false` makes every call fail (no user manager); `failing` makes only calls containing it fail.
    init(systemdUsable: Bool = true, failing: String? = nil) throws {
        let failure = failing.map { "case \"$*\" in *\($0)*) echo 'Failed to enable unit' >&2; exit 1;; esac\n" } ?? ""
        let script = "#!/bin/sh\necho \"$*\" >> '\(log.path)'\n\(failure)exit \(systemdUsable ? 0 : 1)\n"
        try Data(script.utf8).write(to: fakeSystemctl)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: fakeSystemctl.path)
    }

    var environment: [String: String] { ["XDG_CONFIG_HOME": config.path, "ADAPT_SYSTEMCTL": fakeSystemctl.path] }

    func adapt(_ arguments: [String]) throws -> ProcessResult {
        try Executables.run("adapt", ["--state", directory.file("state").path] + arguments, environment: environment)
    }

    var systemctlCalls: [String] {
        ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }
}

@Test func installWritesTimerAndServiceIntoXDGConfigHomeAndEnablesTheTimer() throws {
    let sandbox = try ScheduleSandbox()
    let result = try sandbox.adapt(["schedule", "install", "--lineage", "mail", "--at", "02:30"])
    #expect(result.status == 0, "\(result.stderr)")
    let timer = try String(contentsOf: sandbox.units.appendingPathComponent("adapt-nightly-mail.timer"), encoding: .utf8)
    let service = try String(contentsOf: sandbox.units.appendingPathComponent("adapt-nightly-mail.service"), encoding: .utf8)
    #expect(timer.contains("\nOnCalendar=*-*-* 02:30:00\n"))
    #expect(timer.contains("\nPersistent=true\n"))
    #expect(timer.contains("\nUnit=adapt-nightly-mail.service\n"))
    #expect(timer.contains("\nWantedBy=timers.target\n"))
    let state = sandbox.directory.file("state").standardizedFileURL.path
    let adapt = Executables.url("adapt").resolvingSymlinksInPath().path
    #expect(service.contains("\nType=oneshot\n"))
    #expect(service.contains("\nExecStart=\(adapt) --state \(state) enqueue nightly --lineage mail\n"))
    #expect(service.contains("\nExecStart=\(adapt) --state \(state) work --exit-when-idle\n"))
    #expect(sandbox.systemctlCalls == ["--user show-environment", "--user daemon-reload",
                                       "--user enable --now adapt-nightly-mail.timer"])
    #expect(result.stdout.contains("30 2 * * * \(adapt) --state \(state) enqueue nightly --lineage mail && "
                                   + "\(adapt) --state \(state) work --exit-when-idle"))
}

@Test func removeDisablesAndDeletesBothUnits() throws {
    let sandbox = try ScheduleSandbox()
    #expect(try sandbox.adapt(["schedule", "install", "--lineage", "mail", "--at", "2:00"]).status == 0)
    let result = try sandbox.adapt(["schedule", "remove", "--lineage", "mail"])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(!FileManager.default.fileExists(atPath: sandbox.units.appendingPathComponent("adapt-nightly-mail.timer").path))
    #expect(!FileManager.default.fileExists(atPath: sandbox.units.appendingPathComponent("adapt-nightly-mail.service").path))
    #expect(sandbox.systemctlCalls.suffix(2) == ["--user disable --now adapt-nightly-mail.timer", "--user daemon-reload"])
    let again = try sandbox.adapt(["schedule", "remove", "--lineage", "mail"])
    #expect(again.status == 0)
    #expect(again.stdout.contains("no schedule was installed for lineage mail"))
}

@Test func dryRunPrintsUnitsAndWritesNothing() throws {
    let sandbox = try ScheduleSandbox()
    let result = try sandbox.adapt(["schedule", "install", "--lineage", "mail", "--at", "23:59", "--dry-run"])
    #expect(result.status == 0)
    #expect(result.stdout.contains("OnCalendar=*-*-* 23:59:00"))
    #expect(result.stdout.contains("ExecStart="))
    #expect(result.stdout.contains("59 23 * * * "))
    #expect(!FileManager.default.fileExists(atPath: sandbox.units.path))
    #expect(sandbox.systemctlCalls.isEmpty)
}

@Test func withoutSystemdTheUnitsAreWrittenAndTheCronLineOffered() throws {
    let sandbox = try ScheduleSandbox(systemdUsable: false)
    let result = try sandbox.adapt(["schedule", "install", "--lineage", "notes", "--at", "04:05"])
    #expect(result.status == 0)
    #expect(result.stderr.contains("cannot reach a user service manager"))
    #expect(result.stderr.contains("not enabled"))
    #expect(result.stdout.contains("5 4 * * * "))
    #expect(FileManager.default.fileExists(atPath: sandbox.units.appendingPathComponent("adapt-nightly-notes.timer").path))
    #expect(sandbox.systemctlCalls == ["--user show-environment"])
}

@Test func pipelineFileIsValidatedAndRecordedByAbsolutePath() throws {
    let sandbox = try ScheduleSandbox()
    let good = sandbox.directory.file("my pipeline.json")
    try Data(#"{"train": {"steps": 50}}"#.utf8).write(to: good)
    let result = try sandbox.adapt(["schedule", "install", "--lineage", "mail", "--at", "01:00", "--pipeline", good.path, "--json"])
    #expect(result.status == 0, "\(result.stderr)")
    let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
    #expect((json?["service"] as? String)?.contains("--pipeline \"\(good.standardizedFileURL.path)\"") == true)
    #expect((json?["cron_line"] as? String)?.contains("--pipeline '\(good.standardizedFileURL.path)'") == true)
    #expect(json?["enabled"] as? Bool == true)
    let bad = sandbox.directory.file("bad.json")
    try Data(#"{"train": {"rank": 0}}"#.utf8).write(to: bad)
    let refused = try sandbox.adapt(["schedule", "install", "--lineage", "other", "--at", "01:00", "--pipeline", bad.path])
    #expect(refused.status == 1)
    #expect(refused.stderr.contains("train.rank must be a positive integer, got 0"))
    #expect(!FileManager.default.fileExists(atPath: sandbox.units.appendingPathComponent("adapt-nightly-other.timer").path))
}

@Test(arguments: [["--lineage", "../x", "--at", "02:00"], ["--lineage", "mail", "--at", "24:00"],
                  ["--lineage", "mail", "--at", "2pm"], ["--lineage", "mail"]])
func badLineageOrTimeIsAUsageError(arguments: [String]) throws {
    let sandbox = try ScheduleSandbox()
    let result = try sandbox.adapt(["schedule", "install"] + arguments)
    #expect(result.status == 2, "\(result.stderr)")
    #expect(!FileManager.default.fileExists(atPath: sandbox.units.path))
    #expect(sandbox.systemctlCalls.isEmpty)
}

@Test func unitTextQuotesAwkwardPaths() throws {
    let schedule = try NightlySchedule(lineage: "mail", time: TimeOfDay(parsing: "02:00"), executable: "/opt/my apps/adapt",
                                       stateDirectory: "/home/u/100%/state")
    #expect(schedule.serviceUnit.contains(#"ExecStart="/opt/my apps/adapt" --state /home/u/100%%/state enqueue nightly --lineage mail"#))
    #expect(schedule.cronLine == #"0 2 * * * '/opt/my apps/adapt' --state '/home/u/100\%/state' enqueue nightly --lineage mail && "#
            + #"'/opt/my apps/adapt' --state '/home/u/100\%/state' work --exit-when-idle"#)
}

@Test func unitDirectoryHonoursXDGConfigHome() {
    #expect(NightlySchedule.unitDirectory(environment: ["XDG_CONFIG_HOME": "/x/cfg", "HOME": "/home/u"]).path == "/x/cfg/systemd/user")
    #expect(NightlySchedule.unitDirectory(environment: ["HOME": "/home/u"]).path == "/home/u/.config/systemd/user")
    #expect(NightlySchedule.unitDirectory(environment: ["XDG_CONFIG_HOME": "relative", "HOME": "/home/u"]).path
            == "/home/u/.config/systemd/user")
}

@Test func timesOfDayParseStrictly() throws {
    #expect(try TimeOfDay(parsing: "2:05").description == "02:05")
    #expect(try TimeOfDay(parsing: "00:00") == TimeOfDay(hour: 0, minute: 0))
}

@Test(arguments: ["24:00", "12:60", "12:5", "noon", "12:00:00", "-1:00", ""])
func timesOfDayOutsideTheClockAreRefused(_ bad: String) {
    #expect(throws: PipelineError.invalidTimeOfDay(bad)) { try TimeOfDay(parsing: bad) }
}

@Test func failedEnableStillPrintsTheCronLineAndExitsOne() throws {
    let sandbox = try ScheduleSandbox(failing: "enable")
    let result = try sandbox.adapt(["schedule", "install", "--lineage", "mail", "--at", "03:00"])
    #expect(result.status == 1)
    #expect(result.stdout.contains("0 3 * * * "))
    #expect(result.stderr.contains("'systemctl --user enable --now adapt-nightly-mail.timer' exited with status 1: Failed to enable unit"))
    #expect(FileManager.default.fileExists(atPath: sandbox.units.appendingPathComponent("adapt-nightly-mail.timer").path))
}

@Test func installRefusesAPipelineThatEnqueueWouldRefuse() throws {
    let sandbox = try ScheduleSandbox()
    let absurd = sandbox.directory.file("absurd.json")
    try Data(#"{"train": {"alpha": 1e30}}"#.utf8).write(to: absurd)
    let refused = try sandbox.adapt(["schedule", "install", "--lineage", "mail", "--at", "01:00", "--pipeline", absurd.path])
    #expect(refused.status != 0, "\(refused.stderr)")
    #expect(refused.stderr.contains("train.alpha must be a number above 0 and at most 1000000"), "\(refused.stderr)")
    #expect(!FileManager.default.fileExists(atPath: sandbox.units.appendingPathComponent("adapt-nightly-mail.timer").path))
    #expect(sandbox.systemctlCalls.isEmpty)
}

/// A newline in --state would end ExecStart= and add a line of the path's choosing to the unit (and a second
/// command to the crontab): every path bound for a unit or cron line is refused with a usage error naming it.
@Test func controlCharactersInAScheduledPathAreAUsageErrorNamingTheOption() throws {
    let sandbox = try ScheduleSandbox()
    let pipeline = sandbox.directory.file("pipe\nExecStartPre=/bin/sh -c evil.json")
    let cases: [(arguments: [String], option: String)] = [
        (["--state", sandbox.directory.file("state\nExecStartPre=/bin/touch owned").path], "--state"),
        (["--state", sandbox.directory.file("state\rx").path], "--state"),
        (["--state", sandbox.directory.file("state\u{1B}x").path], "--state"),
        (["--state", sandbox.directory.file("state").path, "--pipeline", pipeline.path], "--pipeline"),
    ]
    for (arguments, option) in cases {
        let global = Array(arguments.prefix(2))
        let result = try Executables.run("adapt", global + ["schedule", "install", "--lineage", "mail", "--at", "02:00"] + arguments.dropFirst(2),
                                         environment: sandbox.environment)
        #expect(result.status == 2, "\(arguments): \(result.stderr)")
        #expect(result.stderr.contains("\(option): the "), "\(result.stderr)")
        #expect(result.stderr.contains("control character"))
        #expect(!result.stderr.contains("ExecStartPre"), "the refusal does not echo the path")
    }
    #expect(!FileManager.default.fileExists(atPath: sandbox.units.path))
    #expect(sandbox.systemctlCalls.isEmpty)
}

@Test(arguments: [("/opt/adapt\n", "/s", nil), ("/opt/adapt", "/s\u{7F}", nil), ("/opt/adapt", "/s", "/p\u{85}.json")] as [(String, String, String?)])
func schedulesRefuseControlCharactersInEveryPathTheyWrite(executable: String, state: String, pipeline: String?) throws {
    let time = try TimeOfDay(parsing: "02:00")
    #expect(throws: PipelineError.self) {
        try NightlySchedule(lineage: "mail", time: time, executable: executable, stateDirectory: state, pipeline: pipeline)
    }
}

/// systemd.syntax(7): `%` starts a specifier and `$` a variable in ExecStart= even inside quotes, so both are
/// doubled; a word with spaces is quoted; cron gets the shell's single quotes and `\%`.
@Test func unitTextEscapesSpecifiersVariablesAndSpacesInEveryPath() throws {
    let schedule = try NightlySchedule(lineage: "mail", time: TimeOfDay(parsing: "02:00"), executable: "/opt/a$HOME/adapt",
                                       stateDirectory: "/srv/100% state/%h", pipeline: "/p/$USER's \"nightly\".json")
    #expect(schedule.serviceUnit.contains(#"ExecStart=/opt/a$$HOME/adapt --state "/srv/100%% state/%%h" enqueue nightly --lineage mail --pipeline "/p/$$USER's \"nightly\".json""#),
            "\(schedule.serviceUnit)")
    #expect(schedule.serviceUnit.contains(#"ExecStart=/opt/a$$HOME/adapt --state "/srv/100%% state/%%h" work --exit-when-idle"#))
    #expect(schedule.cronLine.hasPrefix(#"0 2 * * * '/opt/a$HOME/adapt' --state '/srv/100\% state/\%h' enqueue nightly --lineage mail --pipeline '/p/$USER'\''s "nightly".json' && "#),
            "\(schedule.cronLine)")
}
