import AdaptCore
import Foundation
import Pipelines
import Testing
import TestSupport

@Test func checkExitsZeroForTheBundledPipeline() throws {
    let result = try Executables.run("adapt", ["pipeline", "check", repositoryRoot.appendingPathComponent("pipelines/nightly.json").path])
    #expect(result.status == 0)
    #expect(result.stdout.contains("valid pipeline 'nightly'"))
}

@Test func checkListsEveryProblemAndExitsOne() throws {
    let dir = TemporaryDirectory()
    let file = dir.file("bad.json")
    try Data(#"{"train": {"rank": -1, "rnak": 2}, "steps": [{"name": "x", "kind": "smaple"}]}"#.utf8).write(to: file)
    let result = try Executables.run("adapt", ["pipeline", "check", file.path])
    #expect(result.status == 1)
    #expect(result.stderr.contains("bad.json is not a valid pipeline (3 problems)"))
    #expect(result.stderr.contains("train.rank must be a positive integer, got -1"))
    #expect(result.stderr.contains("train.rnak is not a known field; did you mean train.rank?"))
    #expect(result.stderr.contains(#"steps[0].kind must be one of prune, sample, train, eval, promote, got "smaple"; did you mean sample?"#))
    let json = try Executables.run("adapt", ["pipeline", "check", file.path, "--json"])
    #expect(json.status == 1)
    let report = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
    #expect(report?["valid"] as? Bool == false)
    let paths = (report?["problems"] as? [[String: Any]])?.compactMap { $0["path"] as? String }
    #expect(paths == ["train.rank", "train.rnak", "steps[0].kind"])
}

@Test func checkWithoutAFileIsAUsageError() throws {
    #expect(try Executables.run("adapt", ["pipeline", "check"]).status == 2)
    #expect(try Executables.run("adapt", ["pipeline", "check", "--colour"]).status == 2)
    #expect(try Executables.run("adapt", ["pipeline", "check", "/nonexistent/pipeline.json"]).status == 1)
}

@Test func checkReadsStandardInput() throws {
    let result = try Executables.run("adapt", ["pipeline", "check", "-", "--json"], input: #"{"eval": {"alpha": 0.01}}"#)
    #expect(result.status == 0)
    let report = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
    #expect(report?["valid"] as? Bool == true)
}

@Test func showPrintsTheResolvedPipelineWithDefaults() throws {
    let dir = TemporaryDirectory()
    let file = dir.file("mine.json")
    try Data(#"{"name": "mine", "train": {"rank": 4}}"#.utf8).write(to: file)
    let result = try Executables.run("adapt", ["pipeline", "show", file.path, "--json"])
    #expect(result.status == 0)
    let shown = try Pipeline.parse(Data(result.stdout.utf8), source: "shown")
    #expect(shown.name == "mine" && shown.train.rank == 4 && shown.train.steps == TrainingDefaults.steps)
    #expect(result.stdout.contains("\"learning_rate\""))
    let builtIn = try Executables.run("adapt", ["pipeline", "show", "--json"])
    #expect(try Pipeline.parse(Data(builtIn.stdout.utf8), source: "built-in") == .nightly)
}

@Test func helpOfASubcommandDescribesThatCommand() throws {
    let result = try Executables.run("adapt", ["schedule", "install", "--help"])
    #expect(result.status == 0)
    #expect(result.stdout.contains("usage: adapt schedule install [options]"))
    #expect(result.stdout.contains("--dry-run"))
}
