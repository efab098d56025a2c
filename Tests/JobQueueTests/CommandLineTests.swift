import AdaptCore
import Foundation
import JobQueue
import Storage
import Testing
import TestSupport

/// `adapt`'s job commands through the real executable: JSON shapes, exit codes, and bad input that leaves
/// everything stored as it was.
@Suite struct CommandLineTests {
    let directory = TemporaryDirectory("adapt-cli")
    var state: String { directory.file("state").path }
    var databasePath: String { directory.file("state").appendingPathComponent("adapt.sqlite").path }

    @discardableResult
    func adapt(_ arguments: [String], input: String? = nil) async throws -> ProcessResult {
        try await Executables.runAsync("adapt", ["--state", state, "--durability", "normal"] + arguments, input: input)
    }

    func json(_ result: ProcessResult) throws -> JSONValue {
        try JSON.decode(JSONValue.self, from: result.stdout, context: "stdout")
    }

    /// Every row of the job tables, to compare before and after a refused command.
    func dump() throws -> String {
        let db = try Database(path: databasePath)
        var text = ""
        for table in ["job_runs", "jobs", "job_dependencies", "job_events", "adapt_schema"] {
            text += "\(try db.query("SELECT * FROM \(table)").map { row in ["id", "state", "attempt", "updated_at", "version", "job_id"].map { "\(row[$0])" } })\n"
        }
        return text + "\(try db.scalar("PRAGMA user_version"))"
    }

    @Test func enqueueListShowAndEventsPrintTheDocumentedJSON() async throws {
        let enqueued = try await json(adapt(["enqueue", "noop", "--count", "3", "--chain", "--json"]))
        #expect(enqueued == .object(["run_id": .string("run-1"), "job_ids": .array(["job-1", "job-2", "job-3"].map(JSONValue.string)),
                                     "existing": .bool(false)]))
        let worked = try await adapt(["worker", "--kinds", "noop", "--exit-when-idle", "--json"])
        #expect(worked.status == 0)
        #expect(try json(worked)["succeeded"] == .int(3))

        let jobs = try #require(try await json(adapt(["jobs", "--run", "1", "--json"])).arrayValue)
        #expect(jobs.count == 3)
        for key in ["id", "kind", "state", "attempt", "run_id", "created_at", "updated_at"] {
            #expect(jobs.allSatisfy { $0[key] != nil }, "jobs lack \(key)")
        }
        #expect(jobs[0]["id"] == .string("job-1") && jobs[0]["run_id"] == .string("run-1") && jobs[0]["state"] == .string("succeeded"))
        #expect(jobs[0]["created_at"]?.stringValue?.hasSuffix("Z") == true)

        let runs = try #require(try await json(adapt(["runs", "--json"])).arrayValue)
        for key in ["id", "state", "attempt", "created_at", "updated_at", "kind", "name"] {
            #expect(runs.first?[key] != nil, "runs lack \(key)")
        }
        #expect(runs.first?["state"] == .string("succeeded"))

        let events = try #require(try await json(adapt(["events", "--run", "run-1", "--json"])).arrayValue)
        #expect(events.count == 11)  // job-1: 3 moves; job-2 and job-3: 4 each (they start pending)
        for key in ["id", "job_id", "run_id", "attempt", "from", "to", "at", "message"] {
            #expect(events.allSatisfy { $0[key] != nil }, "events lack \(key)")
        }

        let job = try await json(adapt(["show", "job-2", "--json"]))
        #expect(job["output"]?["attempt"] == .int(1) && job["input"] == .object([:]))
        #expect(job["events"]?.arrayValue?.count == 4 && job["depends_on"] == .array([.string("job-1")]))
        let run = try await json(adapt(["show", "run-1", "--json"]))
        #expect(run["manifest"]?["count"] == .int(3) && run["jobs"]?.arrayValue?.count == 3)

        let table = try await adapt(["jobs"])
        #expect(table.status == 0 && table.stdout.contains("job-3") && table.stdout.contains("succeeded"))
    }

    @Test func enqueueWithTheSameUniqueKeyReturnsTheFirstRun() async throws {
        let first = try await json(adapt(["enqueue", "noop", "--count", "2", "--unique-key", "night-1", "--json"]))
        let second = try await json(adapt(["enqueue", "noop", "--count", "5", "--unique-key", "night-1", "--json"]))
        #expect(first["existing"] == .bool(false) && second["existing"] == .bool(true))
        #expect(first["run_id"] == second["run_id"] && first["job_ids"] == second["job_ids"])
    }

    @Test func unknownIdentifiersFailNamingTheIdAndHowToListThemWithNothingChanged() async throws {
        try await adapt(["enqueue", "noop", "--count", "1"])
        let before = try dump()
        let cases: [([String], String, String)] = [
            (["show", "run-99"], "run-99", "adapt runs"), (["show", "job-99"], "job-99", "adapt jobs"),
            (["show", "99"], "99", "adapt runs"), (["cancel", "run-99"], "run-99", "adapt runs"),
            (["cancel", "99"], "run-99", "adapt runs"), (["retry", "job-99"], "job-99", "adapt jobs"),
            (["jobs", "--run", "99"], "run-99", "adapt runs"), (["events", "--job", "job-99"], "job-99", "adapt jobs"),
        ]
        for (arguments, id, hint) in cases {
            let result = try await adapt(arguments)
            #expect(result.status == 1, "\(arguments)")
            #expect(result.stderr.contains(id) && result.stderr.contains(hint), "\(arguments): \(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
        #expect(try dump() == before)
    }

    @Test func malformedIdentifiersAndAmbiguousNumbersAreUsageErrors() async throws {
        try await adapt(["enqueue", "noop", "--count", "1"])
        let ambiguous = try await adapt(["show", "1"])
        #expect(ambiguous.status == 2 && ambiguous.stderr.contains("run-1") && ambiguous.stderr.contains("job-1"))
        #expect(try await adapt(["cancel", "job-1"]).status == 2)
        #expect(try await adapt(["retry", "banana"]).status == 2)
        #expect(try await adapt(["jobs", "--state", "sleeping"]).status == 2)
        #expect(try await adapt(["worker", "--kinds", "train"]).status == 2)
        #expect(try await adapt(["enqueue", "noop", "--fail-rate", "2"]).status == 2)
        #expect(try await adapt(["prune-history"]).status == 2)
    }

    @Test(arguments: [
        ("{not json", "not valid JSON"),
        (#"{"kind": "t"}"#, "missing field \"steps\""),
        (#"{"kind": "t", "steps": []}"#, "no steps"),
        (#"{"kind": "t", "steps": [{"name": "a", "kind": "t", "depends_on": ["zz"]}]}"#, "'a' depends on 'zz'"),
        (#"{"kind": "t", "steps": [{"name": "a", "kind": "t", "depends_on": ["b"]}, {"name": "b", "kind": "t", "depends_on": ["a"]}]}"#, "cycle (a → b → a)"),
        (#"{"kind": "t", "steps": [{"name": "a", "kind": "t"}, {"name": "a", "kind": "t"}]}"#, "two steps are named 'a'"),
    ])
    func malformedRunDescriptionsAreRefusedWithNothingStored(text: String, message: String) async throws {
        try await adapt(["enqueue", "noop", "--count", "1"])
        let before = try dump()
        let file = directory.file("run.json")
        try Data(text.utf8).write(to: file)
        let result = try await adapt(["enqueue", "run", file.path])
        #expect(result.status == 1)
        #expect(result.stderr.contains(message), "\(result.stderr)")
        let piped = try await adapt(["enqueue", "run", "-"], input: text)
        #expect(piped.status == 1)
        #expect(try dump() == before)
    }

    @Test func aValidRunDescriptionFileIsEnqueued() async throws {
        let text = #"{"kind": "demo", "manifest": {"night": "2026-01-01"}, "steps": [{"name": "a", "kind": "noop"}, {"name": "b", "kind": "noop", "depends_on": ["a"]}]}"#
        let result = try await adapt(["enqueue", "run", "-", "--json"], input: text)
        #expect(result.status == 0)
        #expect(try json(result)["job_ids"]?.arrayValue?.count == 2)
        #expect(try await json(adapt(["show", "run-1", "--json"]))["manifest"] == .object(["night": .string("2026-01-01")]))
    }

    /// A reading, a writing and a working command: each opens the database its own way.
    static let openingCommands = [["runs"], ["enqueue", "noop"], ["worker", "--kinds", "noop", "--exit-when-idle"]]

    @Test(arguments: openingCommands)
    func aFileThatIsNotSQLiteIsRefusedAndLeftAlone(command: [String]) async throws {
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let garbage = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: URL(fileURLWithPath: databasePath))
        let result = try await adapt(command)
        #expect(result.status == 1)
        #expect(result.stderr.contains("not an SQLite database"), "\(result.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: databasePath)) == garbage)
    }

    @Test(arguments: openingCommands)
    func anotherProgramsDatabaseIsRefusedAndLeftAlone(command: [String]) async throws {
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try Database(path: databasePath).execute("CREATE TABLE customers (id INTEGER PRIMARY KEY); INSERT INTO customers VALUES (7)")
        let result = try await adapt(command)
        #expect(result.status == 1)
        #expect(result.stderr.contains("another program's SQLite database (its tables: customers)"), "\(result.stderr)")
        let db = try Database(path: databasePath)
        #expect(try db.query("SELECT name FROM sqlite_schema").compactMap { $0.string("name") } == ["customers"])
    }

    @Test func anEmptyStatePathIsAUsageError() async throws {
        let result = try await Executables.runAsync("adapt", ["--state", "", "runs"])
        #expect(result.status == 2 && result.stderr.contains("--state needs a directory"), "\(result.stderr)")
    }

    @Test(arguments: [["runs"], ["enqueue", "noop"], ["cancel", "run-1"]])
    func aDatabaseFromANewerSchemaIsRefusedAndLeftAlone(command: [String]) async throws {
        try await adapt(["enqueue", "noop", "--count", "2"])
        do {
            let db = try Database(path: databasePath)
            try db.execute("PRAGMA user_version = 99")
        }
        let before = try dump()
        let result = try await adapt(command)
        #expect(result.status == 1)
        #expect(result.stderr.contains("newer"), "\(result.stderr)")
        #expect(try dump() == before)
    }

    @Test(arguments: ["enqueue noop", "enqueue run", "worker", "runs", "jobs", "show", "events", "cancel", "retry", "rescue",
                      "prune-history"])
    func everyJobCommandHasHelp(command: String) async throws {
        let result = try await adapt(command.split(separator: " ").map(String.init) + ["--help"])
        #expect(result.status == 0 && result.stdout.contains("usage: adapt \(command) "))
        #expect(result.stdout.contains("options:") && !result.stdout.contains("SUBCOMMAND"), "\(result.stdout)")
    }

    @Test func cancelRetryRescueAndPruneWorkFromTheCommandLine() async throws {
        try await adapt(["enqueue", "noop", "--count", "3", "--chain"])
        let cancelled = try await json(adapt(["cancel", "run-1", "--json"]))
        #expect(cancelled == .object(["cancelled": .int(3), "running": .int(0)]))
        let retried = try await json(adapt(["retry", "1", "--json"]))
        #expect(retried == .object(["state": .string("ready"), "dependents": .int(2)]))
        #expect(try await adapt(["rescue", "--json"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[\n\n]")
        #expect(try await adapt(["worker", "--kinds", "noop", "--exit-when-idle"]).status == 0)
        #expect(try await json(adapt(["prune-history", "--older-than", "1", "--json"]))["runs"] == .int(0))
        #expect(try await json(adapt(["prune-history", "--older-than", "0", "--json"])) == .object(["runs": .int(1), "jobs": .int(3), "events": .int(17)]))
        #expect(try await json(adapt(["runs", "--json"])) == .array([]))
    }
}
