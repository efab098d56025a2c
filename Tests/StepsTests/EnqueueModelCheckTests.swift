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
