import AdaptCore
import Foundation
import Testing
import TestSupport

/// `adapt enqueue nightly --model` takes only a GGUF file: anything else is refused when the run is enqueued,
/// with nothing stored, instead of failing the train step hours later.
@Suite(.serialized) struct EnqueueModelCheckTests {
    @Test func enqueueRefusesAModelFileThatIsNotGGUF() async throws {
        let fixture = try await PipelineFixture.make(importData: false)
        let notes = fixture.directory.state.models.appendingPathComponent("notes.gguf")
        try Data("not a model\n".utf8).write(to: notes)
        for model in ["notes.gguf", notes.path] {
            let result = try await fixture.adapt(["enqueue", "nightly", "--lineage", "logbook", "--model", model, "--json"])
            #expect(result.status == 1)
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.contains("is not a GGUF file"), "\(result.stderr)")
        }
        #expect(try fixture.queue().runs().isEmpty)
    }

    /// The tiny model's bytes, with `edit` applied, written as models/<name>.
    func variant(of fixture: PipelineFixture, _ name: String, _ edit: (inout Data) throws -> Void) throws {
        var data = try Data(contentsOf: fixture.directory.state.models.appendingPathComponent("tiny.gguf"))
        try edit(&data)
        try data.write(to: fixture.directory.state.models.appendingPathComponent(name))
    }

    /// Where `text`'s bytes first occur in `data`, past `from`.
    func offset(of text: String, in data: Data, from: Int = 0) throws -> Int {
        try #require(data[from...].firstRange(of: Data(text.utf8))?.lowerBound, "\(text) not found")
    }

    /// A truncated download and a corrupt file start with "GGUF" like a good one: the whole structure is
    /// checked at enqueue (header, metadata, tensor table, every tensor's data inside the file, the
    /// architecture), so the run is refused now instead of failing every training attempt later.
    @Test func enqueueRefusesATruncatedOrCorruptModelNamingTheProblem() async throws {
        let fixture = try await PipelineFixture.make(importData: false)
        try variant(of: fixture, "cut-data.gguf") { $0 = $0.prefix($0.count - 64) }
        try variant(of: fixture, "cut-header.gguf") { $0 = $0.prefix(40) }
        // The tensor table: name, n_dims (u32), n_dims × u64 dimensions, type (u32), offset (u64).
        try variant(of: fixture, "bad-type.gguf") { data in
            let name = try self.offset(of: "token_embd.weight", in: data)
            let type = name + "token_embd.weight".utf8.count + 4 + 2 * 8
            data.replaceSubrange(type..<(type + 4), with: [99, 0, 0, 0])
        }
        try variant(of: fixture, "bad-offset.gguf") { data in
            let name = try self.offset(of: "output_norm.weight", in: data)
            let offset = name + "output_norm.weight".utf8.count + 4 + 8 + 4
            data.replaceSubrange(offset..<(offset + 8), with: [0, 0, 0, 0, 0, 0, 0, 0x10])
        }
        try variant(of: fixture, "other-arch.gguf") { data in
            let key = try self.offset(of: "general.architecture", in: data)
            let value = key + "general.architecture".utf8.count + 4 + 8
            data.replaceSubrange(value..<(value + 5), with: Array("mamba".utf8))
        }
        let cases = [
            ("cut-data.gguf", "extends past the end of the file"),
            ("cut-header.gguf", "more than the file can hold"),
            ("bad-type.gguf", "tensor token_embd.weight has GGML type 99"),
            ("bad-offset.gguf", "tensor output_norm.weight extends past the end of the file"),
            ("other-arch.gguf", "architecture"),
        ]
        for (model, problem) in cases {
            let result = try await fixture.adapt(["enqueue", "nightly", "--lineage", "logbook", "--model", model, "--json"])
            #expect(result.status == 1, "\(model): \(result.stderr)")
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.contains("base model \(model) cannot be loaded: "), "\(model): \(result.stderr)")
            #expect(result.stderr.contains(problem), "\(model): \(result.stderr)")
        }
        #expect(try fixture.queue().runs().isEmpty)
        // The intact model is accepted, so the refusals above are the edits' doing.
        try fixture.expectSuccess(await fixture.adapt(["enqueue", "nightly", "--lineage", "logbook", "--model", "tiny.gguf"]))
    }

    @Test func enqueueWithAnEmptyModelNameIsAUsageError() async throws {
        let fixture = try await PipelineFixture.make(importData: false)
        let result = try await fixture.adapt(["enqueue", "nightly", "--lineage", "logbook", "--model", "", "--json"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--model needs a model file"), "\(result.stderr)")
        #expect(!result.stderr.contains("NSCocoaErrorDomain"))
        #expect(try fixture.queue().runs().isEmpty)
    }

    @Test func enqueueRefusesADirectoryAsTheModel() async throws {
        let fixture = try await PipelineFixture.make(importData: false)
        let result = try await fixture.adapt(["enqueue", "nightly", "--lineage", "logbook", "--model",
                                              fixture.directory.state.models.path, "--json"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("is neither a file nor a model"), "\(result.stderr)")
        #expect(try fixture.queue().runs().isEmpty)
    }

    /// A bundle names its base model by file name, and replay refuses one that is not a plain name: such a model
    /// is refused at enqueue, so no run is recorded that could not be replayed.
    @Test(arguments: [".hidden.gguf", "two\nlines.gguf"])
    func enqueueRefusesAModelWhoseFileNameABundleCouldNotCarry(name: String) async throws {
        let fixture = try await PipelineFixture.make(importData: false)
        let model = fixture.directory.file(name)
        try FileManager.default.copyItem(at: fixture.directory.state.models.appendingPathComponent("tiny.gguf"), to: model)
        let result = try await fixture.adapt(["enqueue", "nightly", "--lineage", "logbook", "--model", model.path, "--json"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("a bundle of the run could not name it") && result.stderr.contains("rename the file"), "\(result.stderr)")
        #expect(try fixture.queue().runs().isEmpty)
    }
}

/// A malformed --night or --lineage is a usage error (exit 2), like every other bad argument.
@Test(arguments: [["--night", "2026-13-01"], ["--lineage", "a.b"], ["--lineage", "-"]])
func enqueueWithAMalformedNightOrLineageIsAUsageError(arguments: [String]) async throws {
    let fixture = try await PipelineFixture.make(importData: false)
    var all = ["enqueue", "nightly", "--lineage", "logbook", "--model", "tiny.gguf"]
    if arguments[0] == "--lineage" { all[3] = arguments[1] } else { all += arguments }
    let result = try await fixture.adapt(all)
    #expect(result.status == 2, "\(result.stderr)")
    #expect(try fixture.queue().runs().isEmpty)
}
