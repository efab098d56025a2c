import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `schedule install` writes its unit files itself: a symbolic link planted at a unit's path (pointing at a
/// file the user keeps, say ~/.bashrc) is refused, and neither the link nor what it names is changed.
@Test(arguments: ["adapt-nightly-mail.timer", "adapt-nightly-mail.service"])
func installRefusesALinkPlantedAtAUnitPathAndLeavesItsTargetAlone(unit: String) throws {
    let sandbox = try ScheduleSandbox()
    try FileManager.default.createDirectory(at: sandbox.units, withIntermediateDirectories: true)
    let target = sandbox.directory.file("bashrc")
    try Data("alias ls='ls --color'\n".utf8).write(to: target)
    let link = sandbox.units.appendingPathComponent(unit)
    try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)

    let result = try sandbox.adapt(["schedule", "install", "--lineage", "mail", "--at", "02:30"])
    #expect(result.status == 1, "\(result.stderr)")
    #expect(result.stderr.contains("symbolic link"), "\(result.stderr)")
    #expect(try Data(contentsOf: target) == Data("alias ls='ls --color'\n".utf8))
    #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == target.path)
    #expect(!sandbox.systemctlCalls.contains { $0.contains("enable") })
}

/// The unit directory and the parents it lacks are made private whatever the umask.
@Test func installMakesTheUnitDirectoryOwnerOnlyUnderAnOpenUmask() throws {
    let sandbox = try ScheduleSandbox()
    let adapt = Executables.url("adapt").path, state = sandbox.directory.file("state").path
    let script = "umask 000; exec '\(adapt)' --state '\(state)' schedule install --lineage mail --at 02:30"
    let result = try Executables.run(executableAt: URL(fileURLWithPath: "/bin/sh"), ["-c", script], environment: sandbox.environment)
    #expect(result.status == 0, "\(result.stderr)")
    for directory in [sandbox.config, sandbox.config.appendingPathComponent("systemd"), sandbox.units] {
        var status = stat()
        #expect(lstat(directory.path, &status) == 0 && status.st_mode & 0o777 == 0o700, "\(directory.path)")
    }
}

/// The unit directory comes from XDG_CONFIG_HOME, whatever it holds: an escape code there is printed escaped.
@Test func installPrintsAUnitDirectoryHoldingAnEscapeCodeEscaped() throws {
    let sandbox = try ScheduleSandbox()
    let config = sandbox.directory.file("config\u{1b}[2J")
    let result = try Executables.run("adapt", ["--state", sandbox.directory.file("state").path, "schedule", "install",
                                               "--lineage", "mail", "--at", "02:30", "--dry-run"],
                                     environment: sandbox.environment.merging(["XDG_CONFIG_HOME": config.path]) { $1 })
    #expect(result.status == 0, "\(result.stderr)")
    #expect(!result.stdout.unicodeScalars.contains { $0.value == 0x1B }, "\(result.stdout.debugDescription)")
    #expect(result.stdout.contains("config\\x1b[2J/systemd/user/adapt-nightly-mail.timer"), "\(result.stdout)")
}
