import AdaptCore
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `--state DIR` naming a directory that is not an adapt state (a home folder, a project, another program's
/// database): every command refuses it with a non-zero exit, and nothing in it is created, changed or made
/// private. A fresh checkout's `state/` (its README and `models/`) is a state.
@Suite struct ForeignStateDirectoryTests {
    /// Reading commands and writing ones, each of which used to open (and tighten) the directory.
    static let commands: [[String]] = [
        ["jobs"], ["runs"], ["events"], ["data", "list"], ["data", "stats"], ["registry", "list"],
        ["data", "import", "EXAMPLES", "--lineage", "mail"], ["enqueue", "noop"],
        ["data", "policy", "--lineage", "mail", "--ttl-days", "3"], ["rescue"], ["gc"],
    ]

    /// Every path under `root` (links not followed) with its mode and, for a file, its content.
    static func snapshot(_ root: URL) -> [String: String] {
        var entries: [String: String] = [:]
        var pending = [root.path]
        while let path = pending.popLast() {
            var status = stat()
            guard lstat(path, &status) == 0 else { continue }
            let kind = status.st_mode & S_IFMT
            var entry = String(status.st_mode, radix: 8)
            if kind == S_IFREG { entry += " " + (FileManager.default.contents(atPath: path).map { $0.base64EncodedString() } ?? "?") }
            if kind == S_IFLNK { entry += " -> " + ((try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? "?") }
            entries[path] = entry
            if kind == S_IFDIR { pending += ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).map { path + "/" + $0 } }
        }
        return entries
    }

    static func adapt(_ state: URL, _ arguments: [String], examples: URL) async throws -> ProcessResult {
        let arguments = arguments.map { $0 == "EXAMPLES" ? examples.path : $0 }
        return try await Executables.runAsync("adapt", ["--state", state.path] + arguments,
                                              environment: ["ADAPT_DATABASE": "", "ADAPT_STATE": ""])
    }

    static func examples(in directory: TemporaryDirectory) throws -> URL {
        let file = directory.file("examples.jsonl")
        try Data("{\"prompt\": \"a\", \"completion\": \"b\"}\n".utf8).write(to: file)
        return file
    }

    @Test func aProjectDirectoryIsRefusedByEveryCommandAndLeftExactlyAsItWas() async throws {
        let directory = TemporaryDirectory("adapt-foreign")
        let project = directory.file("project")
        try FileManager.default.createDirectory(at: project.appendingPathComponent("src"), withIntermediateDirectories: true)
        try Data("notes\n".utf8).write(to: project.appendingPathComponent("notes.txt"))
        try Data("print(1)\n".utf8).write(to: project.appendingPathComponent("src/main.py"))
        try FileManager.default.createSymbolicLink(at: project.appendingPathComponent("link"), withDestinationURL: project.appendingPathComponent("notes.txt"))
        chmod(project.path, 0o755)
        chmod(project.appendingPathComponent("src").path, 0o775)
        chmod(project.appendingPathComponent("notes.txt").path, 0o644)
        chmod(project.appendingPathComponent("src/main.py").path, 0o664)
        let before = Self.snapshot(project)
        let examples = try Self.examples(in: directory)

        for command in Self.commands {
            let result = try await Self.adapt(project, command, examples: examples)
            #expect(result.status == 1 || result.status == 2, "\(command) exited \(result.status): \(result.stderr)")
            #expect(result.stderr.contains("not an adapt state directory") || result.stderr.contains("no adapt state"),
                    "\(command): \(result.stderr)")
            #expect(Self.snapshot(project) == before, "\(command) changed the directory")
        }
    }

    @Test func aDirectoryHoldingAnotherProgramsDatabaseKeepsItsModesWhenRefused() async throws {
        let directory = TemporaryDirectory("adapt-foreign-db")
        let other = directory.file("other")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        let sqlite = try Executables.run(executableAt: URL(fileURLWithPath: "/usr/bin/sqlite3"),
                                         [other.appendingPathComponent("adapt.sqlite").path, "CREATE TABLE invoices (id INTEGER); INSERT INTO invoices VALUES (7);"])
        #expect(sqlite.status == 0, "\(sqlite.stderr)")
        try Data("ledger\n".utf8).write(to: other.appendingPathComponent("ledger.txt"))
        chmod(other.path, 0o755)
        chmod(other.appendingPathComponent("adapt.sqlite").path, 0o644)
        chmod(other.appendingPathComponent("ledger.txt").path, 0o644)
        let before = Self.snapshot(other)
        let examples = try Self.examples(in: directory)

        for command in Self.commands {
            let result = try await Self.adapt(other, command, examples: examples)
            #expect(result.status == 1 || result.status == 2, "\(command) exited \(result.status): \(result.stderr)")
            #expect(Self.snapshot(other) == before, "\(command) changed the directory: \(result.stderr)")
        }
    }

    /// A step worker opens its state as `adapt worker` does: a project directory or another program's database given
    /// as its --state is refused, nothing created in it and no mode changed.
    @Test func aStepWorkerRefusesADirectoryThatIsNotAStateAndLeavesItAsItWas() async throws {
        let directory = TemporaryDirectory("adapt-foreign-worker")
        let project = directory.file("project"), other = directory.file("other")
        for folder in [project, other] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        try Data("notes\n".utf8).write(to: project.appendingPathComponent("notes.txt"))
        let sqlite = try Executables.run(executableAt: URL(fileURLWithPath: "/usr/bin/sqlite3"),
                                         [other.appendingPathComponent("adapt.sqlite").path, "CREATE TABLE invoices (id INTEGER);"])
        #expect(sqlite.status == 0, "\(sqlite.stderr)")
        for path in [project.path, other.path] { chmod(path, 0o755) }
        chmod(project.appendingPathComponent("notes.txt").path, 0o644)
        chmod(other.appendingPathComponent("adapt.sqlite").path, 0o644)
        for folder in [project, other] {
            let before = Self.snapshot(folder)
            for worker in ["adapt-prune-worker", "adapt-train-worker"] {
                let result = try await Executables.runAsync(worker, ["--state", folder.path, "--exit-when-idle"],
                                                            environment: ["ADAPT_DATABASE": "", "ADAPT_STATE": ""])
                #expect(result.status == 1 || result.status == 2, "\(worker) exited \(result.status): \(result.stderr)")
                #expect(Self.snapshot(folder) == before, "\(worker) changed \(folder.lastPathComponent): \(result.stderr)")
            }
        }
    }

    @Test func aFreshCheckoutsStateIsUsedAndOnlyTheEnginesEntriesInItAreMadePrivate() async throws {
        let directory = TemporaryDirectory("adapt-checkout-state")
        let state = directory.file("state")
        try FileManager.default.createDirectory(at: state.appendingPathComponent("models"), withIntermediateDirectories: true)
        try Data("# state/\n".utf8).write(to: state.appendingPathComponent("README.md"))
        let imported = try await Self.adapt(state, ["data", "import", "EXAMPLES", "--lineage", "mail"], examples: try Self.examples(in: directory))
        #expect(imported.status == 0, "\(imported.stderr)")
        // Something a person put beside the engine's files is theirs: its mode stays; the database's is tightened.
        let stray = state.appendingPathComponent("notes.txt"), database = state.appendingPathComponent("adapt.sqlite")
        try Data("mine\n".utf8).write(to: stray)
        chmod(stray.path, 0o644)
        chmod(database.path, 0o644)
        let listed = try await Self.adapt(state, ["data", "list"], examples: stray)
        #expect(listed.status == 0, "\(listed.stderr)")
        var status = stat()
        #expect(stat(stray.path, &status) == 0 && status.st_mode & 0o777 == 0o644, "\(String(status.st_mode & 0o777, radix: 8))")
        #expect(stat(database.path, &status) == 0 && status.st_mode & 0o777 == 0o600, "\(String(status.st_mode & 0o777, radix: 8))")
    }
}
