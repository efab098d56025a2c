import AdaptCore
import Foundation
import Registry
import Storage
import Testing
import TestSupport

/// Starts `adapt … registry promote|rollback|add` as a real process, and SIGKILLs it after `delay` unless it
/// finished first. Returns true when the kill landed on a running process.
func runAndKill(_ arguments: [String], after delay: Duration) throws -> Bool {
    let process = Process()
    process.executableURL = Executables.url("adapt")
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    let deadline = ContinuousClock.now + delay
    while ContinuousClock.now < deadline && process.isRunning { usleep(200) }
    let killed = process.isRunning && kill(process.processIdentifier, SIGKILL) == 0
    process.waitUntilExit()
    return killed && process.terminationReason == .uncaughtSignal
}

@Test func killingPromoteRollbackAndAddAtRandomMomentsLeavesAConsistentRegistry() throws {
    let f = try RegistryFixture()
    let versions = try f.register(4)
    let state = f.dir.state.root.path
    let lineage = RegistryFixture.lineage
    let ids = Set(versions.map(\.id))

    // How long one uninterrupted command takes here, so kills land throughout its life.
    let start = ContinuousClock.now
    for _ in 0..<3 {
        // Forced: the fixture's versions have no engine gate report; this test is about the pointer's writes.
        let r = try Executables.run("adapt", ["--state", state, "registry", "promote", "mail/v1", "--force"])
        #expect(r.status == 0, "\(r.stderr)")
    }
    let typical = (ContinuousClock.now - start) / 3

    let rng = CounterRNG(seed: 20261130)
    var killedCount = 0
    var previousHistory = try f.registry.history(lineage: lineage).count
    for iteration in 0..<60 {
        let before = try f.registry.active(lineage: lineage)?.id
        let choice = rng.uniform(.test, step: UInt64(iteration), index: 0)
        let promote = choice < 0.5, register = choice >= 0.85
        let target = 1 + Int(rng.below(4, .test, step: UInt64(iteration), index: 1))
        let versionsBefore = try f.registry.versions().count
        let arguments: [String]
        if register {
            // Registering writes the blob, then the row: a kill in between may leave a spare blob, never a row without one.
            let file = f.dir.file("new-\(iteration).bin")
            try TestAdapter.bytes(1000 + iteration).write(to: file)
            arguments = ["--state", state, "registry", "add", file.path, "--lineage", "mail"]
        } else if promote {
            arguments = ["--state", state, "registry", "promote", "mail/v\(target)", "--force"]
        } else {
            arguments = ["--state", state, "registry", "rollback", "--lineage", "mail"]
        }
        let delay = typical * (1.3 * rng.uniform(.test, step: UInt64(iteration), index: 2))
        if try runAndKill(arguments, after: delay) { killedCount += 1 }

        // A fresh connection, as the next process would open it.
        let db = try Database(path: f.dir.state.database.path)
        #expect(try db.scalar("PRAGMA integrity_check") == .text("ok"))
        let reader = try AdapterRegistry(database: db, blobs: f.dir.state.blobs)
        let after = try reader.active(lineage: lineage)?.id
        let history = try reader.history(lineage: lineage)
        let versionsAfter = try reader.versions().count
        if !register { #expect(versionsAfter == versionsBefore) }
        #expect(versionsAfter - versionsBefore <= 1)
        if register { #expect(after == before) }
        if after != before {
            // Exactly one recorded move, from the old pointer to the new one.
            #expect(history.count == previousHistory + 1, "iteration \(iteration)")
            #expect(history.last?.fromVersionID == before && history.last?.toVersionID == after)
            if promote { #expect(after == versions[target - 1].id) } else { #expect(history.last?.reason == .rollback) }
        } else {
            #expect(history.count == previousHistory, "iteration \(iteration): history moved without the pointer")
        }
        if let after { #expect(ids.contains(after), "only the four gated versions can become active") }
        #expect(history.last?.toVersionID == after)
        #expect(try reader.verify().allSatisfy { $0.state == .ok })
        previousHistory = history.count
    }
    print("crash test: typical run \(typical), killed \(killedCount) of 60")
    #expect(killedCount > 0, "no command was killed while running; the test exercised nothing")
}
