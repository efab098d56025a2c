import AdaptCore
import Foundation
import Model
import TestSupport
import Testing

/// `adapt train` refuses, before any work and with exit 2, an output that would
/// destroy an input or could never be written, and settings that would write an unloadable adapter.
struct TrainCommandRefusalTests {
    /// A directory with the tiny model and a two-line dataset.
    static func fixture() throws -> (directory: TemporaryDirectory, model: URL, data: URL) {
        let directory = TemporaryDirectory("train-refusals")
        let model = directory.file("tiny.gguf")
        try TinyModel(seed: 3).write(to: model)
        let data = directory.file("data.jsonl")
        try Data("{\"prompt\": \"hello\", \"completion\": \" world\"}\n{\"prompt\": \"the\", \"completion\": \" sea\"}\n".utf8).write(to: data)
        return (directory, model, data)
    }

    func train(_ fixture: (directory: TemporaryDirectory, model: URL, data: URL), out: String, _ extra: [String] = []) throws -> ProcessResult {
        try Executables.run("adapt", ["train", "--model", fixture.model.path, "--data", fixture.data.path, "--out", out,
                                      "--steps", "1", "--rank", "2"] + extra)
    }

    /// The output spelled differently from the model's path, or a symlink to the data: still the same file.
    @Test(arguments: ["--model", "--data"])
    func refusesAnOutputThatIsTheModelOrTheDataAndLeavesThemIntact(option: String) throws {
        let f = try Self.fixture()
        let modelBytes = try Data(contentsOf: f.model), dataBytes = try Data(contentsOf: f.data)
        let out: String
        if option == "--model" {
            out = f.directory.path + "/./tiny.gguf"
        } else {
            let link = f.directory.file("link.jsonl")
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: f.data)
            out = link.path
        }
        let result = try train(f, out: out)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("--out is the \(option) file"), "\(result.stderr)")
        #expect(try Data(contentsOf: f.model) == modelBytes)
        #expect(try Data(contentsOf: f.data) == dataBytes)
    }

    @Test func refusesAnOutputThatIsTheHeldOutFile() throws {
        let f = try Self.fixture()
        let result = try train(f, out: f.data.path, ["--held-out", f.data.path])
        #expect(result.status == 2, "\(result.stderr)")
    }

    @Test func refusesADirectoryAsOutputBeforeTraining() throws {
        let f = try Self.fixture()
        let result = try train(f, out: f.directory.path)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("it is a directory"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: f.directory.path + ".checkpoints"))
    }

    /// An alpha past what any adapter file may hold would write an adapter that no import or session reads back.
    @Test(arguments: ["1e19", "3e38"])
    func refusesAnAlphaPastTheLargestAnAdapterMayHave(alpha: String) throws {
        let f = try Self.fixture()
        let out = f.directory.file("a.lora")
        let result = try train(f, out: out.path, ["--alpha", alpha])
        #expect(result.status != 0 && result.status < 128, "exit \(result.status): \(result.stderr)")
        #expect(result.stderr.contains("alpha") && result.stderr.contains("at most"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.path))
    }

    @Test func refusesATargetNamedTwice() throws {
        let f = try Self.fixture()
        let out = f.directory.file("a.lora")
        let result = try train(f, out: out.path, ["--targets", "q,v,q"])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("--targets names q twice"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.path))
    }

    @Test func stillTrainsAndReplacesAnEarlierAdapter() throws {
        let f = try Self.fixture()
        let out = f.directory.file("a.lora")
        #expect(try train(f, out: out.path, ["--targets", "q,v"]).status == 0)
        let earlier = try Data(contentsOf: out)
        let result = try train(f, out: out.path, ["--targets", "q,v", "--seed", "9",
                                                  "--checkpoint-dir", f.directory.file("second.checkpoints").path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Data(contentsOf: out) != earlier)
    }

    /// Checkpoints are written and pruned in --checkpoint-dir: never in the state's blob store.
    @Test func refusesACheckpointDirectoryInsideTheStatesBlobStore() throws {
        let f = try Self.fixture()
        let blobs = f.directory.file("state/blobs")
        try FileManager.default.createDirectory(at: blobs, withIntermediateDirectories: true)
        let result = try Executables.run("adapt", ["--state", f.directory.file("state").path, "train", "--model", f.model.path,
                                                   "--data", f.data.path, "--out", f.directory.file("a.lora").path,
                                                   "--checkpoint-dir", blobs.path, "--steps", "1", "--rank", "2"])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("--checkpoint-dir") && result.stderr.contains("blob store"), "\(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: blobs.path).isEmpty)
    }

    /// A file that is not an adapter (a typo for another path) is refused, not replaced.
    @Test func refusesToReplaceAFileThatIsNotAnAdapter() throws {
        let f = try Self.fixture()
        let out = f.directory.file("notes.txt")
        try Data("the user's notes".utf8).write(to: out)
        let result = try train(f, out: out.path)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("is not an adapt adapter file"), "\(result.stderr)")
        #expect(try Data(contentsOf: out) == Data("the user's notes".utf8))
    }
}
