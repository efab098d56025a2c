import AdaptCore
import Foundation
import Services
import Testing
import TestSupport

/// What `adapt migrate` refuses of the command line, and two migrates into one directory at once.
@Suite struct MigrateCommandLineTests {
    @Test(arguments: [["--state", "elsewhere"], ["--database", "postgres://127.0.0.1:1/x"]])
    func theGlobalStateAndDatabaseOptionsAreUsageErrors(global: [String]) throws {
        let fixture = try MigrationFixture()
        let result = try Executables.run("adapt", global + ["migrate", "--from", fixture.state.root.path,
                                                            "--to", "postgres://127.0.0.1:1/x"])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("takes no \(global[0])"), "\(result.stderr)")
    }

    @Test func aSecondMigrateIntoTheSameDirectoryLeavesTheFirstOnesHalfBuiltCopyAlone() throws {
        let fixture = try MigrationFixture()
        let database = try PostgresCluster.shared().makeDatabase()
        _ = try StateMigration.run(from: .directory(fixture.state.root), to: .postgres(database))
        let parent = TemporaryDirectory("migrate-lock")
        let target = parent.url.appendingPathComponent("state")
        // A first migrate into `target`, half way: it holds the lock beside the target and is building its copy.
        let lockPath = parent.url.appendingPathComponent(".state.migrate-lock").path
        let lock = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        #expect(lock >= 0 && flock(lock, LOCK_EX) == 0)
        let building = parent.url.appendingPathComponent(".state.migrating-first")
        try FileManager.default.createDirectory(at: building, withIntermediateDirectories: true)

        let second = try Executables.run("adapt", ["migrate", "--from", database, "--to", target.path])
        #expect(second.status == 1 && second.stderr.contains("another adapt migrate is copying into"), "\(second.stderr)")
        #expect(FileManager.default.fileExists(atPath: building.path), "the first migrate's copy was removed")
        #expect(!FileManager.default.fileExists(atPath: target.path))

        // The first one killed (the kernel releases its lock): the next migrate clears what it left and copies.
        close(lock)
        let third = try Executables.run("adapt", ["migrate", "--from", database, "--to", target.path])
        #expect(third.status == 0, "\(third.stderr)")
        #expect(!FileManager.default.fileExists(atPath: building.path))
        #expect(FileManager.default.fileExists(atPath: StateDirectory(root: target).database.path))
    }
}
