import AdaptCore
import Foundation
import Storage
import Testing
import TestSupport

/// `adapt registry …` run as real processes against one temporary state directory, or (`.postgres`) a new
/// database in the throwaway cluster named with `--database`, its adapter files in that database.
struct RegistryCLI {
    let dir = TemporaryDirectory("registry-cli")
    /// `--database URL` on PostgreSQL, nothing on SQLite.
    let database: [String]

    /// An existing, empty state: commands that only read (`registry list`, `verify`) refuse a missing one.
    init() {
        database = []
        try? dir.state.create()
        _ = try? Database(path: dir.state.database.path)
    }

    /// On PostgreSQL, a new database and no state directory.
    init(_ backend: Backend) throws {
        if backend == .postgres { self.init(database: ["--database", try PostgresCluster.shared().makeDatabase()]) } else { self.init() }
    }

    private init(database: [String]) { self.database = database }

    @discardableResult
    func run(_ arguments: [String]) throws -> ProcessResult {
        try Executables.run("adapt", ["--state", dir.state.root.path] + database + arguments)
    }

    func file(_ name: String, _ data: Data) throws -> String {
        try data.write(to: dir.file(name))
        return dir.file(name).path
    }

    func json(_ arguments: [String]) throws -> JSONValue {
        let result = try run(arguments + ["--json"])
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
        return try JSONDecoder().decode(JSONValue.self, from: Data(result.stdout.utf8))
    }

    /// A gate report as `adapt gate --json` prints it, from real score files.
    func gateReport(better: Bool) throws -> String {
        let baseline = try file("b.txt", Data((0..<12).map { "\(2.0 + Double($0) * 0.1)" }.joined(separator: "\n").utf8))
        let candidate = try file("c.txt", Data((0..<12).map { "\(2.0 + Double($0) * 0.1 + (better ? -0.05 : 0.05))" }.joined(separator: "\n").utf8))
        let report = try Executables.run("adapt", ["gate", "--candidate", candidate, "--baseline", baseline, "--json"])
        #expect(report.status == 0)
        return try file(better ? "better.json" : "worse.json", Data(report.stdout.utf8))
    }
}

@Test(arguments: Backend.allCases)
func registryListPrintsTheDocumentedFields(backend: Backend) throws {
    let cli = try RegistryCLI(backend)
    let adapter = try cli.file("a.bin", TestAdapter.bytes(3))
    #expect(try cli.run(["registry", "add", adapter, "--lineage", "mail", "--chat-convention", "chatml"]).status == 0)
    #expect(try cli.run(["registry", "promote", "mail/v1", "--force"]).status == 0)
    let list = try #require(try cli.json(["registry", "list"]).arrayValue)
    #expect(list.count == 1)
    let row = try #require(list[0].objectValue)
    for key in ["version", "lineage", "digest", "active", "created_at", "metrics"] { #expect(row[key] != nil, "missing \(key)") }
    #expect(row["version"] == .string("v1") && row["lineage"] == .string("mail") && row["active"] == .bool(true))
    #expect(row["digest"] == .string(Digest.sha256(TestAdapter.bytes(3)).hex))
    #expect(row["metrics"]?.objectValue != nil)
    let shown = try cli.json(["registry", "show", "v1", "--lineage", "mail"])
    #expect(shown["metadata"]?["chat_convention"] == .string("chatml"))
}

/// `adapt promote` is the same command as `adapt registry promote`.
@Test(arguments: [["registry", "promote"], ["promote"]], Backend.allCases)
func promoteWithoutTheEnginesReportIsRefusedAndForceIsRecorded(command: [String], backend: Backend) throws {
    let cli = try RegistryCLI(backend)
    let adapter = try cli.file("a.bin", TestAdapter.bytes(4))
    try cli.run(["registry", "add", adapter, "--lineage", "mail"])
    let refused = try cli.run(command + ["v1", "--lineage", "mail"])
    #expect(refused.status == 1)
    #expect(refused.stderr.contains("no gate report made by the engine") && refused.stderr.contains("--force"), "\(refused.stderr)")
    #expect(refused.stderr.contains("adapt eval --lineage mail --version 1"), "\(refused.stderr)")
    #expect(try #require(try cli.json(["registry", "list"]).arrayValue)[0]["active"] == .bool(false))
    let forced = try cli.run(command + ["v1", "--lineage", "mail", "--force"])
    #expect(forced.status == 0)
    #expect(forced.stderr.contains("--force bypassed: the gate (it has no gate report made by the engine"), "\(forced.stderr)")
    let history = try #require(try cli.json(["registry", "history", "--lineage", "mail"]).arrayValue)
    #expect(history.count == 1)
    #expect(history[0]["reason"] == .string("force"))
    #expect(history[0]["bypassed"]?.stringValue?.contains("no gate report made by the engine") == true)
}

@Test(arguments: Backend.allCases)
func rollbackGoesBackThenToBase(backend: Backend) throws {
    let cli = try RegistryCLI(backend)
    for i in 1...2 {
        try cli.run(["registry", "add", try cli.file("a\(i).bin", TestAdapter.bytes(i)), "--lineage", "mail"])
        #expect(try cli.run(["registry", "promote", "mail/v\(i)", "--force"]).status == 0)
    }
    #expect(try cli.json(["registry", "rollback", "--lineage", "mail"])["to"] == .string("v1"))
    #expect(try cli.json(["registry", "rollback", "--lineage", "mail"])["to"] == .null)
    let again = try cli.run(["registry", "rollback", "--lineage", "mail"])
    #expect(again.status == 1 && again.stderr.contains("nothing to roll back"))
    #expect(try cli.run(["registry", "rollback"]).status == 2)
}

@Test func badRegistryInputIsAClearErrorAndChangesNothing() throws {
    let cli = RegistryCLI()
    let adapter = try cli.file("a.bin", TestAdapter.bytes(5))
    try cli.run(["registry", "add", adapter, "--lineage", "mail"])
    try cli.run(["registry", "add", try cli.file("b.bin", TestAdapter.bytes(6)), "--lineage", "mail"])
    #expect(try cli.run(["registry", "promote", "mail/v1", "--force"]).status == 0)
    let before = try cli.run(["registry", "list", "--json"]).stdout

    let unknown = try cli.run(["registry", "promote", "mail/v9"])
    #expect(unknown.status == 1 && unknown.stderr.contains("no version v9"))
    let lineage = try cli.run(["registry", "promote", "news/v1"])
    #expect(lineage.status == 1 && lineage.stderr.contains("lineage news"))
    #expect(try cli.run(["registry", "promote", "version-one"]).status == 2)
    #expect(try cli.run(["registry", "add", cli.dir.file("absent.bin").path, "--lineage", "mail"]).status == 1)
    #expect(try cli.run(["registry", "add", try cli.file("empty.bin", Data()), "--lineage", "mail"]).status == 1)
    #expect(try cli.run(["registry", "add", adapter, "--lineage", "Dear Ms. Okafor"]).status == 2)

    // Corrupt v2's file: promotion is refused, verify names it, nothing moves.
    let digest = Digest.sha256(TestAdapter.bytes(6))
    try Data("corrupted".utf8).write(to: cli.dir.state.blobs.url(for: digest))
    let corrupt = try cli.run(["registry", "promote", "mail/v2"])
    #expect(corrupt.status == 1 && corrupt.stderr.contains("corrupt") && corrupt.stderr.contains("nothing was changed"))
    #expect(try cli.run(["registry", "list", "--json"]).stdout == before)
    let verify = try cli.run(["registry", "verify", "--json"])
    #expect(verify.status == 1)
    let states = try JSONDecoder().decode(JSONValue.self, from: Data(verify.stdout.utf8)).arrayValue?.compactMap { $0["state"]?.stringValue }
    #expect(states == ["ok", "corrupt"])
}

/// On PostgreSQL the adapter files are rows of the database's blob table: `registry verify` rehashes them there, and
/// a damaged chunk is named corrupt (exit 1) while the state directory is never created.
@Test func verifyOnPostgresRehashesTheAdaptersKeptInTheDatabase() throws {
    let cli = try RegistryCLI(.postgres)
    #expect(try cli.run(["registry", "add", try cli.file("a.bin", TestAdapter.bytes(7)), "--lineage", "mail"]).status == 0)
    #expect(try cli.json(["registry", "verify"]).arrayValue?.compactMap { $0["state"]?.stringValue } == ["ok"])
    let connection = try PostgresConnection(cli.database[1])
    #expect(try connection.run("UPDATE blob_chunks SET bytes = ? WHERE seq = 0", Data("damaged".utf8)) == 1)
    let verify = try cli.run(["registry", "verify", "--json"])
    #expect(verify.status == 1, "\(verify.stderr)")
    let states = try JSONDecoder().decode(JSONValue.self, from: Data(verify.stdout.utf8)).arrayValue?.compactMap { $0["state"]?.stringValue }
    #expect(states == ["corrupt"])
    #expect(!FileManager.default.fileExists(atPath: cli.dir.state.database.path))
}
