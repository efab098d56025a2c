import AdaptCore
import Foundation
import Testing
import TestSupport

/// `adapt worker`, `adapt work` and the step executables they run (`adapt-prune-worker` …) store nothing of their own:
/// on a mistyped `--state` (a directory nobody made) they are refused with the sentence every command that needs a
/// state uses, naming the path and how a state is made, and they create nothing. In a state directory that exists but
/// holds no database yet (models fetched, nothing enqueued: a worker service started before the first run) they make
/// the job tables and wait.
@Suite struct WorkersNeedAStateTests {
    static let workerCommands: [[String]] = [["worker", "--kinds", "noop", "--exit-when-idle"], ["work", "--exit-when-idle"]]

    func adapt(_ state: URL, _ arguments: [String]) async throws -> ProcessResult {
        try await Executables.runAsync("adapt", ["--state", state.path] + arguments,
                                       environment: ["ADAPT_DATABASE": "", "ADAPT_STATE": ""])
    }

    @Test(arguments: workerCommands)
    func aWorkerOnAMistypedStateIsRefusedAndCreatesNothingButWaitsInAStateDirectoryWithoutADatabaseYet(command: [String]) async throws {
        let directory = TemporaryDirectory("adapt-worker-no-state")
        let typo = directory.file("stat")
        let result = try await adapt(typo, command)
        #expect(result.status == 1, "\(command): \(result.stderr)")
        #expect(result.stderr.contains("no adapt state at \(typo.path) (the directory does not exist); nothing was created"),
                "\(command): \(result.stderr)")
        #expect(result.stderr.contains("adapt enqueue") && result.stderr.contains("adapt data import"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: typo.path), "\(command) created the state it was pointed at")

        let state = directory.file("state")
        try FileManager.default.createDirectory(at: state.appendingPathComponent("models"), withIntermediateDirectories: true)
        let early = try await adapt(state, command)
        #expect(early.status == 0, "\(command): \(early.stderr)")
        #expect(FileManager.default.fileExists(atPath: state.appendingPathComponent("adapt.sqlite").path))
    }

    static let stepExecutables = ["prune", "sample", "train", "eval", "promote"].map { "adapt-\($0)-worker" }

    /// Started by hand on a mistyped --state, a step executable is refused as `adapt worker` is; started as `adapt work`
    /// starts it (the state's path, its standard input a pipe it watches) in a state directory without a database yet,
    /// it makes the job tables and exits idle.
    @Test(arguments: stepExecutables)
    func aStepExecutableOnAMistypedStateIsRefusedAndCreatesNothingButWaitsInAStateDirectoryWithoutADatabaseYet(
        executable: String
    ) async throws {
        let directory = TemporaryDirectory("adapt-step-worker-no-state")
        let environment = ["ADAPT_DATABASE": "", "ADAPT_STATE": ""]
        let typo = directory.file("stat")
        let result = try await Executables.runAsync(executable, ["--state", typo.path, "--exit-when-idle"],
                                                    environment: environment)
        #expect(result.status == 1, "\(executable): \(result.stderr)")
        #expect(result.stderr.contains("no adapt state at \(typo.path) (the directory does not exist); nothing was created"),
                "\(executable): \(result.stderr)")
        #expect(result.stderr.contains("adapt enqueue") && result.stderr.contains("adapt data import"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: typo.path), "\(executable) created the state it was pointed at")

        let state = directory.file("state")
        try FileManager.default.createDirectory(at: state.appendingPathComponent("models"), withIntermediateDirectories: true)
        let arguments = ["--state", state.path, "--durability", "normal", "--exit-when-idle", "--exit-when-stdin-closes"]
        let early = try await Executables.runAsync(executable, arguments, environment: environment, input: "")
        #expect(early.status == 0, "\(executable): \(early.stderr)")
        #expect(FileManager.default.fileExists(atPath: state.appendingPathComponent("adapt.sqlite").path))
    }
}
