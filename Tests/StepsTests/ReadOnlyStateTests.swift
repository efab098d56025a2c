import AdaptCore
import Foundation
import Testing
import TestSupport

/// Commands that only read: a missing state is an error that creates nothing, and a read-only state is read
/// without a single file created or changed.
@Suite(.serialized) struct ReadOnlyStateTests {
    static let readingCommands: [[String]] = [
        ["runs"], ["jobs"], ["events"], ["show", "run-1"], ["data", "list"], ["data", "stats"],
        ["registry", "list"], ["registry", "history"], ["registry", "verify"], ["gc", "--dry-run"],
    ]

    /// Every path under `root` with its size, mode and modification time.
    static func listing(_ root: URL) -> [String] {
        let paths = (FileManager.default.subpaths(atPath: root.path) ?? []).sorted()
        return ([""] + paths).map { path in
            var info = stat()
            _ = lstat(root.appendingPathComponent(path).path, &info)
            return "\(path) \(info.st_size) \(String(info.st_mode, radix: 8)) \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
        }
    }

    static func setWritable(_ root: URL, _ writable: Bool) {
        for path in [""] + (FileManager.default.subpaths(atPath: root.path) ?? []) {
            let url = root.appendingPathComponent(path)
            var info = stat()
            _ = lstat(url.path, &info)
            let isDirectory = (info.st_mode & S_IFMT) == S_IFDIR
            _ = chmod(url.path, writable ? (isDirectory ? 0o700 : 0o600) : (info.st_mode & 0o7555))
        }
    }

    @Test(arguments: readingCommands)
    func aReadingCommandRefusesAMissingStateAndCreatesNothing(command: [String]) async throws {
        let directory = TemporaryDirectory()
        let typo = directory.file("stat")
        let result = try await blocking { try Executables.run("adapt", ["--state", typo.path] + command) }
        #expect(result.status == 1, "\(command): \(result.stderr)")
        #expect(result.stderr.contains("no adapt state at \(typo.path) (the directory does not exist); nothing was created"),
                "\(command): \(result.stderr)")
        #expect(result.stderr.contains("adapt data import"))
        #expect(!FileManager.default.fileExists(atPath: typo.path), "\(command) created the state it was pointed at")

        // A directory without a database is no state either.
        try FileManager.default.createDirectory(at: typo, withIntermediateDirectories: true)
        let empty = try await blocking { try Executables.run("adapt", ["--state", typo.path] + command) }
        #expect(empty.status == 1)
        #expect(empty.stderr.contains("(the database does not exist)"), "\(command): \(empty.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: typo.path).isEmpty)
    }

    @Test func aBadLineageIsAUsageErrorEvenWithoutAState() async throws {
        let directory = TemporaryDirectory()
        for command in [["data", "list"], ["data", "stats"]] {
            let result = try await blocking {
                try Executables.run("adapt", ["--state", directory.file("none").path] + command + ["--lineage", "../x"])
            }
            #expect(result.status == 2, "\(command): \(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.file("none").path))
    }

    @Test func readingCommandsWorkOnAReadOnlyStateAndChangeNothing() async throws {
        let fixture = try await PipelineFixture.make()
        let run = try await fixture.enqueue()
        let copy = fixture.directory.file("read-only-state")
        try FileManager.default.copyItem(at: fixture.directory.state.root, to: copy)
        #expect(!FileManager.default.fileExists(atPath: copy.appendingPathComponent("adapt.sqlite-wal").path),
                "a writer left its WAL behind; the copy would not be a closed state")
        Self.setWritable(copy, false)
        defer { Self.setWritable(copy, true) }
        let before = Self.listing(copy)
        for command in Self.readingCommands {
            let arguments = ["--state", copy.path] + command.map { $0 == "run-1" ? run : $0 }
            let result = try await blocking { try Executables.run("adapt", arguments) }
            #expect(result.status == 0, "\(command): \(result.stderr)")
        }
        let list = try await blocking { try Executables.run("adapt", ["--state", copy.path, "data", "list", "--json"]) }
        #expect((try JSON.decode(JSONValue.self, from: list.stdout, context: "data list").arrayValue?.count ?? 0) > 0)
        let runs = try await blocking { try Executables.run("adapt", ["--state", copy.path, "runs", "--json"]) }
        #expect(runs.stdout.contains(run))
        #expect(Self.listing(copy) == before, "a reading command created or changed a file of a read-only state")
        // A command that writes is still refused by the permissions, where they bind (not as root).
        if getuid() != 0 {
            let write = try await blocking { try Executables.run("adapt", ["--state", copy.path, "enqueue", "noop"]) }
            #expect(write.status == 1)
        }
    }
}
