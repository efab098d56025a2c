import Foundation
import Testing
import TestSupport

/// `replay --bundle --scratch DIR` writes a state's worth of files into DIR: never into the state's own
/// directories, and never through a link to somewhere else.
@Test func aReplayScratchInsideTheStateOrThroughALinkIsRefusedAndNothingIsWritten() throws {
    let directory = TemporaryDirectory("adapt-scratch-target")
    let bundle = PipelineFixture.root.appendingPathComponent("pipelines/examples/logbook/bundles/night-1-threads-1.bundle").path
    let state = directory.file("state")
    let insideBlobs = state.appendingPathComponent("blobs/xx")
    let elsewhere = directory.file("elsewhere")
    let link = directory.file("link")
    for created in [insideBlobs, elsewhere] { try FileManager.default.createDirectory(at: created, withIntermediateDirectories: true) }
    try FileManager.default.createSymbolicLink(at: link, withDestinationURL: elsewhere)
    for (scratch, reason) in [(insideBlobs, "blob store"), (link, "symbolic link")] {
        let result = try Executables.run("adapt", ["--state", state.path, "replay", "--bundle", bundle, "--scratch", scratch.path, "--check"])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("--scratch") && result.stderr.contains(reason), "\(result.stderr)")
    }
    #expect(try FileManager.default.contentsOfDirectory(atPath: insideBlobs.path).isEmpty)
    #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path).isEmpty)
}
