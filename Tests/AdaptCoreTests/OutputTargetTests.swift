import AdaptCore
import Foundation
import Testing
import TestSupport

/// The state's own files are found however the path reaches them: through a link to the state, or a `..` after a
/// linked directory (taken as the kernel takes it, from where the link leads).
@Test func theStatesDatabaseIsRecognisedThroughALinkedDirectoryOrDotDot() throws {
    let dir = TemporaryDirectory()
    let state = StateDirectory(root: dir.file("state"))
    try state.create()
    try Data("SQLite format 3\u{0}".utf8).write(to: state.database)
    try FileManager.default.createSymbolicLink(at: dir.file("alias"), withDestinationURL: state.root)
    try FileManager.default.createDirectory(at: dir.file("deep/er"), withIntermediateDirectories: true)
    try FileManager.default.createSymbolicLink(at: dir.file("jump"), withDestinationURL: dir.file("deep/er"))
    for path in [dir.path + "/alias/adapt.sqlite", dir.path + "/jump/../../state/adapt.sqlite", state.root.path + "/adapt.sqlite-wal"] {
        #expect(throws: OutputRefusal.self, "\(path)") { try OutputTarget.checkFile(URL(fileURLWithPath: path), kind: .gguf, state: state) }
    }
    // A new file beside the state, and a new model in its models/, are fine.
    try OutputTarget.checkFile(dir.file("elsewhere.gguf"), kind: .gguf, state: state)
    try OutputTarget.checkFile(state.models.appendingPathComponent("new.gguf"), kind: .gguf, state: state)
}
