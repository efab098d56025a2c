import AdaptCore
import Foundation
import Testing
import TestSupport

/// A pipeline file, an import line and a run description that repeat a key are refused, naming key and
/// line, and nothing is stored: Foundation would keep the first value where jq and Python keep the last.
@Test func aPipelineFileWithARepeatedKeyIsRefusedNamingTheKeyAndLine() throws {
    let dir = TemporaryDirectory()
    let file = dir.file("dup.json")
    try Data("{\"train\": {\"learning_rate\": 0.001,\n  \"learning_rate\": 0.1}}\n".utf8).write(to: file)
    let result = try Executables.run("adapt", ["pipeline", "check", file.path])
    #expect(result.status == 1)
    #expect(result.stderr.contains(#"key "learning_rate" appears twice in one object at line 2 (in $.train)"#), "\(result.stderr)")
    #expect(result.stderr.contains("dup.json"))
}

@Test func anImportLineWithARepeatedKeyIsRefusedAndNothingIsStored() throws {
    let dir = TemporaryDirectory()
    let state = dir.file("state").path
    let file = dir.file("data.jsonl")
    try Data("{\"prompt\": \"a\", \"completion\": \"b\"}\n{\"prompt\": \"a\", \"completion\": \"b\", \"completion\": \"c\"}\n".utf8).write(to: file)
    let result = try Executables.run("adapt", ["--state", state, "data", "import", file.path, "--lineage", "mail"])
    #expect(result.status == 1)
    #expect(result.stderr.contains(#"line 2: key "completion" appears twice in one object (in $)"#), "\(result.stderr)")
    // A refused first import creates no state at all.
    #expect(!FileManager.default.fileExists(atPath: state))
}

@Test func aRunDescriptionWithARepeatedKeyIsRefusedAndNothingIsEnqueued() throws {
    let dir = TemporaryDirectory()
    let state = dir.file("state").path
    let file = dir.file("run.json")
    try Data("{\"kind\": \"noop\",\n \"steps\": [{\"name\": \"a\", \"kind\": \"noop\", \"max_attempts\": 1,\n \"max_attempts\": 9}]}".utf8).write(to: file)
    // A state with a job table, so that an empty listing afterwards means nothing was enqueued.
    #expect(try Executables.run("adapt", ["--state", state, "data", "policy", "--lineage", "mail", "--max-uses", "2"]).status == 0)
    let result = try Executables.run("adapt", ["--state", state, "enqueue", "run", file.path])
    #expect(result.status == 1)
    #expect(result.stderr.contains(#"key "max_attempts" appears twice in one object at line 3 (in $.steps[0])"#), "\(result.stderr)")
    let runs = try Executables.run("adapt", ["--state", state, "runs", "--json"])
    #expect(try JSON.decode(JSONValue.self, from: runs.stdout, context: "runs").arrayValue?.isEmpty == true)
}
