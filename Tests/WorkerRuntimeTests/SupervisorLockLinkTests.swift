import Foundation
import Testing
import TestSupport
import WorkerRuntime

/// The supervisor truncates its lock file and writes its pid there: a symbolic link planted at `work.lock`
/// (pointing at a file the user keeps) is refused, and the file it names keeps its bytes.
@Test func aLinkPlantedAtTheWorkLockIsRefusedAndWhatItNamesIsKept() throws {
    let directory = TemporaryDirectory("work-lock-link")
    let kept = directory.file("profile")
    try Data("export PATH=$HOME/bin:$PATH\n".utf8).write(to: kept)
    try FileManager.default.createSymbolicLink(at: directory.file("work.lock"), withDestinationURL: kept)
    #expect(throws: SupervisorError.self) { _ = try SupervisorLock(stateRoot: directory.url) }
    #expect(try Data(contentsOf: kept) == Data("export PATH=$HOME/bin:$PATH\n".utf8))
}
