import AdaptCore
import Foundation
import ReplayBuffer
import Testing
import TestSupport

/// `adapt data …` through the built executable, on a temporary state directory or (`.postgres`) on a new database
/// in the throwaway cluster, named with `--database`.
struct AdaptData {
    let directory = TemporaryDirectory("adapt-data")
    /// `--database URL` on PostgreSQL, nothing on SQLite.
    let database: [String]

    init() { database = [] }

    init(_ backend: Backend) throws {
        database = backend == .postgres ? ["--database", try PostgresCluster.shared().makeDatabase()] : []
    }

    var statePath: String { directory.url.appendingPathComponent("state").path }

    @discardableResult
    func run(_ arguments: [String], input: String? = nil) throws -> ProcessResult {
        try Executables.run("adapt", ["--state", statePath, "--durability", "normal"] + database + arguments, input: input)
    }

    func write(_ name: String, _ text: String) throws -> String {
        let url = directory.file(name)
        try Data(text.utf8).write(to: url)
        return url.path
    }

    func json(_ arguments: [String]) throws -> JSONValue {
        let result = try run(arguments + ["--json"])
        #expect(result.status == 0, "\(result.stderr)")
        return try JSON.decode(JSONValue.self, from: result.stdout, context: "stdout")
    }
}

@Test(arguments: Backend.allCases)
func badJSONLThroughTheExecutableExitsOneWithLineNumbersAndStoresNothing(backend: Backend) throws {
    let adapt = try AdaptData(backend)
    let good = try adapt.write("good.jsonl", "{\"prompt\": \"p\", \"completion\": \"c\"}\n")
    #expect(try adapt.run(["data", "import", good, "--lineage", "mail"]).status == 0)
    let before = try adapt.json(["data", "list"])

    let bad = try adapt.write("bad.jsonl", """
        {"text": "fine"}
        {"prompt": "no completion"}
        {oops
        {"text": "x", "weight": 0}
        {"text": ""}
        """)
    let result = try adapt.run(["data", "import", bad, "--lineage", "mail"])
    #expect(result.status == 1)
    #expect(result.stdout.isEmpty)
    for expected in ["line 2: missing field \"completion\"", "line 3: invalid JSON",
                     "line 4: field \"weight\" must be a number from 0.000001 to 1000000", "line 5: empty completion",
                     "nothing imported: 4 bad lines"] {
        #expect(result.stderr.contains(expected), "\(result.stderr)")
    }
    #expect(try adapt.json(["data", "list"]) == before)

    let skipped = try adapt.run(["data", "import", bad, "--lineage", "mail", "--skip-bad", "--json"])
    #expect(skipped.status == 0)
    let report = try JSON.decode(JSONValue.self, from: skipped.stdout, context: "stdout")
    #expect(report["imported"] == .int(1) && report["skipped"] == .int(4) && report["committed"] == .bool(true))
    #expect(skipped.stderr.contains("skipped line 3: invalid JSON"))
}

@Test(arguments: Backend.allCases)
func listPrintsTheDesignedJSONFieldsAndImportReadsStandardInput(backend: Backend) throws {
    let adapt = try AdaptData(backend)
    let input = "{\"prompt\": \"Call me\", \"completion\": \"at 020 7946 0958\", \"source\": \"sms\", \"weight\": 2}\n"
    let result = try adapt.run(["data", "import", "-", "--lineage", "mail", "--json"], input: input)
    #expect(result.status == 0, "\(result.stderr)")
    let report = try JSON.decode(JSONValue.self, from: result.stdout, context: "stdout")
    #expect(report["scrubbed"] == .object(["phone": .int(1)]))

    let list = try adapt.json(["data", "list", "--lineage", "mail"])
    let row = try #require(list.arrayValue?.first?.objectValue)
    for field in ["id", "lineage", "prompt", "completion", "source", "weight", "split", "created_at"] {
        #expect(row[field] != nil, "missing \(field)")
    }
    #expect(row["completion"] == .string("at [PHONE]") && row["source"] == .string("sms") && row["weight"]?.doubleValue == 2)
    #expect(row["lineage"] == .string("mail"))
    let split = try #require(row["split"]?.stringValue)
    let other = split == "train" ? "held_out" : "train"
    #expect(try adapt.json(["data", "list", "--split", split]).arrayValue?.count == 1)
    #expect(try adapt.json(["data", "list", "--split", other]) == .array([]))
    #expect(try adapt.json(["data", "list", "--lineage", "other"]) == .array([]))

    let stats = try adapt.json(["data", "stats"])
    #expect(stats.arrayValue?.first?["examples"] == .int(1))
    #expect(stats.arrayValue?.first?["scrubbed"]?["phone"] == .int(1))
    #expect(FileManager.default.fileExists(atPath: adapt.statePath) == (backend == .sqlite),
            "on PostgreSQL nothing is written to the state directory")
}

@Test(arguments: Backend.allCases)
func policyAndForgetThroughTheExecutable(backend: Backend) throws {
    let adapt = try AdaptData(backend)
    let policy = try adapt.json(["data", "policy", "--lineage", "mail", "--ttl-days", "30", "--max-uses", "5",
                                 "--max-tokens-per-night", "20000"])
    #expect(policy["ttl_days"] == .int(30) && policy["max_uses_per_example"] == .int(5) && policy["max_tokens_per_night"] == .int(20000))
    #expect(try adapt.json(["data", "policy", "--lineage", "mail"]) == policy)

    let file = try adapt.write("x.jsonl", "{\"text\": \"a\", \"source\": \"s1\"}\n{\"text\": \"b\", \"source\": \"s2\"}\n{\"text\": \"c\", \"source\": \"s2\"}\n")
    #expect(try adapt.run(["data", "import", file, "--lineage", "mail"]).status == 0)
    // Counts only: how many examples and blobs went, never which text.
    let forgotten = try adapt.json(["data", "forget", "--source", "s2", "--lineage", "mail"])
    #expect(forgotten["forgotten"] == .int(2) && forgotten["erased_blobs"] == .int(0) && forgotten["adapter_versions"] == .array([]))
    // SQLite truncates its write-ahead log, PostgreSQL rewrites the tables that held the rows.
    #expect(forgotten["wal_truncated"] == .bool(backend == .sqlite) && forgotten["tables_rewritten"] == .bool(backend == .postgres))
    let id = try #require(try adapt.json(["data", "list"]).arrayValue?.first?["id"]?.stringValue)
    let forgot = try adapt.run(["data", "forget", "--id", id])
    #expect(forgot.status == 0 && forgot.stdout == "forgot 1 example\n")
    #expect(try adapt.json(["data", "list"]) == .array([]))
}

@Test(arguments: [
    ["data", "forget"],
    ["data", "forget", "--id", "a", "--source", "b"],
    ["data", "list", "--split", "test"],
    ["data", "policy", "--lineage", "mail", "--max-uses", "0"],
    ["data", "policy", "--lineage", "bad name"],
    ["data", "import", "x.jsonl"],
])
func badCommandLinesAreUsageErrors(arguments: [String]) throws {
    let result = try AdaptData().run(arguments)
    #expect(result.status == 2, "\(arguments): \(result.stderr)")
    #expect(result.stdout.isEmpty)
}

@Test func invalidUTF8AndOversizedLinesThroughTheExecutable() throws {
    let adapt = AdaptData()
    var bytes = Data("{\"text\": \"ok\"}\n{\"text\": \"caf".utf8)
    bytes.append(contentsOf: [0xE9])  // Latin-1 é: not UTF-8
    bytes.append(Data("\"}\n{\"text\": \"\(String(repeating: "y", count: 100))\"}\n".utf8))
    let url = adapt.directory.file("mixed.jsonl")
    try bytes.write(to: url)
    let result = try adapt.run(["data", "import", url.path, "--lineage", "mail", "--max-record-bytes", "64", "--json"])
    #expect(result.status == 1)
    #expect(result.stderr.contains("line 2: invalid UTF-8"))
    #expect(result.stderr.contains("line 3: record is 112 bytes, over the limit of 64"))
    let report = try JSON.decode(JSONValue.self, from: result.stdout, context: "stdout")
    #expect(report["committed"] == .bool(false) && report["imported"] == .int(0))
    #expect(!FileManager.default.fileExists(atPath: adapt.statePath), "the refused import created a state")
}

@Test func aDeviceOrDirectoryIsNamedForWhatItIs() throws {
    let device = try AdaptData().run(["data", "import", "/dev/null", "--lineage", "mail"])
    #expect(device.status == 1 && device.stderr.contains("it is a device, not a regular file"), "\(device.stderr)")
    let directory = try AdaptData().run(["data", "import", "/", "--lineage", "mail"])
    #expect(directory.status == 1 && directory.stderr.contains("it is a directory"), "\(directory.stderr)")
}

@Test func aMissingFileIsAFailureNotAUsageError() throws {
    let result = try AdaptData().run(["data", "import", "no-such-file.jsonl", "--lineage", "mail"])
    #expect(result.status == 1)
    #expect(result.stderr.contains("cannot read no-such-file.jsonl"))
}
