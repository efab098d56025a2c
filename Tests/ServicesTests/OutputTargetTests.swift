import AdaptCore
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// What the commands that write where a user points them (`--out`) may replace, run as processes: never the
/// state's database, WAL, blobs or models, never a file the command reads, never through a link, and an existing
/// file only when it is of the kind the command writes; what may hold user text is 0600 whatever was there.
struct OutputTargetTests {
    /// A state with a tiny model, a lineage of examples, a run whose first step succeeded and one registered version.
    struct Fixture {
        let directory = TemporaryDirectory("output-target")
        var state: URL { directory.url.appendingPathComponent("state") }
        var model: URL { state.appendingPathComponent("models/tiny.gguf") }
        var database: URL { state.appendingPathComponent("adapt.sqlite") }

        init() throws {
            try expectSuccess(adapt(["model", "tiny", "--out", model.path]))
            let data = directory.file("data.jsonl")
            let lines = (0..<4).map { "{\"prompt\": \"note \($0)\", \"completion\": \" kept \($0)\"}" }
            try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: data)
            try expectSuccess(adapt(["data", "import", data.path, "--lineage", "mail"]))
            try expectSuccess(adapt(["enqueue", "nightly", "--lineage", "mail", "--model", model.path, "--night", "2026-12-01"]))
            try expectSuccess(adapt(["work", "--exit-when-idle"]))
            let adapter = directory.file("trained.lora")
            try expectSuccess(adapt(["train", "--model", model.path, "--data", data.path, "--out", adapter.path,
                                     "--steps", "1", "--rank", "2"]))
            try expectSuccess(adapt(["registry", "add", adapter.path, "--lineage", "mail"]))
        }

        @discardableResult
        func adapt(_ arguments: [String], umask: String? = nil) throws -> ProcessResult {
            let all = ["--state", state.path] + arguments
            guard let umask else { return try Executables.run("adapt", all) }
            // The mask is the process's own: set by a shell that then becomes adapt.
            let quoted = ([Executables.url("adapt").path] + all).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
            return try Executables.run(executableAt: URL(fileURLWithPath: "/bin/sh"), ["-c", "umask \(umask); exec " + quoted.joined(separator: " ")])
        }

        func expectSuccess(_ result: ProcessResult) throws {
            #expect(result.status == 0, "\(result.stderr)")
            if result.status != 0 { throw SetupFailed() }
        }

        /// Every regular file of the state (database, blobs, models), by path, with its bytes.
        func snapshot() throws -> [String: Data] {
            var files: [String: Data] = [:]
            let enumerator = FileManager.default.enumerator(at: state, includingPropertiesForKeys: [.isRegularFileKey])
            while let url = enumerator?.nextObject() as? URL {
                guard try url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true,
                      !url.lastPathComponent.hasSuffix("-shm") else { continue }
                files[url.path] = try Data(contentsOf: url)
            }
            return files
        }

        /// The one blob that holds the registered version's adapter file.
        func versionBlob() throws -> URL {
            let blobs = state.appendingPathComponent("blobs")
            let enumerator = FileManager.default.enumerator(at: blobs, includingPropertiesForKeys: nil)
            while let url = enumerator?.nextObject() as? URL {
                if let data = try? Data(contentsOf: url), data.starts(with: Data("ADAPTLRA".utf8)) { return url }
            }
            throw SetupFailed()
        }
    }

    struct SetupFailed: Error {}

    /// The commands with a file `--out`, each as its arguments before `--out PATH`.
    static let commands: [String: [String]] = [
        "report": ["report", "run-1"],
        "run export": ["run", "export", "run-1", "--include-user-data"],
        "registry export": ["registry", "export", "mail", "--version", "1", "--format", "gguf-lora"],
        "model tiny": ["model", "tiny"],
        "model synth": ["model", "synth", "--shape", "qwen2.5-0.5b", "--blocks", "1", "--vocabulary", "400"],
    ]

    @Test(arguments: ["report", "run export", "registry export", "model tiny", "model synth"])
    func anOutputNamingTheStatesFilesOrALinkOrAnotherKindOfFileIsRefusedAndNothingChanges(command: String) throws {
        let fixture = try Fixture()
        let arguments = Self.commands[command]! + (command == "registry export" ? ["--model", fixture.model.path] : [])
        let link = fixture.directory.file("link-to-database")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: fixture.database)
        let notes = fixture.directory.file("notes.txt")
        try Data("the user's own notes\n".utf8).write(to: notes)
        let targets: [(URL, String)] = [
            (fixture.database, "the state's database"),
            (fixture.state.appendingPathComponent("adapt.sqlite-wal"), "WAL file"),
            (fixture.model, command == "registry export" ? "is the --model file" : "a model in the state's models directory"),
            (try fixture.versionBlob(), "the state's blob store"),
            (link, "symbolic link"),
            (notes, "the kind of file this command writes"),
        ]
        let before = try fixture.snapshot()
        for (target, problem) in targets {
            let result = try fixture.adapt(arguments + ["--out", target.path])
            #expect(result.status == 2, "\(command) --out \(target.lastPathComponent): \(result.stderr)")
            #expect(result.stderr.contains(problem), "\(command) --out \(target.lastPathComponent): \(result.stderr)")
        }
        #expect(try fixture.snapshot() == before)
        #expect(try Data(contentsOf: notes) == Data("the user's own notes\n".utf8))
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == fixture.database.path)
        #expect(try fixture.adapt(["registry", "list"]).status == 0)
    }

    @Test(arguments: ["000", "022"])
    func filesThatMayHoldUserTextAreOwnerOnlyWhateverWasThereAndTheirDirectoriesToo(umask: String) throws {
        let fixture = try Fixture()
        func mode(_ url: URL) -> mode_t {
            var status = stat()
            return lstat(url.path, &status) == 0 ? status.st_mode & 0o777 : 0
        }
        // Written once (over an empty file, as mktemp leaves one), opened up to 0644 (as a copy or an editor might
        // leave it), then replaced: a file of the kind the command writes is still replaced.
        let export = ["registry", "export", "mail", "--version", "1", "--format", "gguf-lora", "--model", fixture.model.path]
        for (arguments, name) in [(["report", "run-1", "--include-text"], "page.html"),
                                  (["run", "export", "run-1", "--include-user-data"], "night.bundle"), (export, "mail.gguf")] {
            let out = fixture.directory.file(name)
            try Data().write(to: out)
            try fixture.expectSuccess(fixture.adapt(arguments + ["--out", out.path], umask: umask))
            #expect(chmod(out.path, 0o644) == 0)
            try fixture.expectSuccess(fixture.adapt(arguments + ["--out", out.path], umask: umask))
            #expect(mode(out) == 0o600, "\(name) is \(String(mode(out), radix: 8))")
        }
        for format in ["peft", "mlx"] {
            let top = fixture.directory.file("exports-\(format)"), out = top.appendingPathComponent("nested/\(format)")
            try fixture.expectSuccess(fixture.adapt(["registry", "export", "mail", "--version", "1", "--format", format,
                                                     "--model", fixture.model.path, "--out", out.path], umask: umask))
            for directory in [top, top.appendingPathComponent("nested"), out] {
                #expect(mode(directory) == 0o700, "\(directory.path) is \(String(mode(directory), radix: 8))")
            }
            for file in try FileManager.default.contentsOfDirectory(at: out, includingPropertiesForKeys: nil) {
                #expect(mode(file) == 0o600, "\(file.path) is \(String(mode(file), radix: 8))")
            }
        }
    }

    @Test func anExportDirectoryHoldingAnotherFileUnderAnExportsNameIsRefusedAndKept() throws {
        let fixture = try Fixture()
        let out = fixture.directory.file("peft")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let config = out.appendingPathComponent("adapter_config.json")
        try Data("not json, the user's file\n".utf8).write(to: config)
        let result = try fixture.adapt(["registry", "export", "mail", "--version", "1", "--format", "peft",
                                        "--model", fixture.model.path, "--out", out.path])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("is not a JSON file"), "\(result.stderr)")
        #expect(try Data(contentsOf: config) == Data("not json, the user's file\n".utf8))
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("adapter_model.safetensors").path))
    }

    /// A GGUF-LoRA export replaces an earlier adapter, never a whole model kept outside the state.
    @Test func aGGUFLoRAExportRefusesToReplaceAWholeModel() throws {
        let fixture = try Fixture()
        let copy = fixture.directory.file("my-model.gguf")
        try FileManager.default.copyItem(at: fixture.model, to: copy)
        let result = try fixture.adapt(["registry", "export", "mail", "--version", "1", "--format", "gguf-lora",
                                        "--model", fixture.model.path, "--out", copy.path])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("is not a GGUF-LoRA adapter"), "\(result.stderr)")
        #expect(try Data(contentsOf: copy) == Data(contentsOf: fixture.model))
    }

    @Test func manualRefusesADirectoryWhereAPagesNameHoldsAnotherFile() throws {
        let directory = TemporaryDirectory("manual-out")
        let page = directory.file("adapt.1")
        try Data("my own notes\n".utf8).write(to: page)
        let result = try Executables.run("adapt", ["manual", "--out", directory.path])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("is not a manual page"), "\(result.stderr)")
        #expect(try Data(contentsOf: page) == Data("my own notes\n".utf8))
    }
}
