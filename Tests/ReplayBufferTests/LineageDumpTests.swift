import AdaptCore
import Foundation
import ReplayBuffer
import Storage
import Testing

/// A lineage's buffer, dumped and restored elsewhere, samples exactly as the original does (what replay needs).
@Test func aRestoredDumpSamplesTheSameSnapshotsAsTheOriginal() throws {
    let original = try BufferFixture()
    try original.importLines(40)
    _ = try original.store.setPolicy(lineage: "mail") { $0.maxUsesPerExample = 2 }
    _ = try SampleStep.run(store: original.store, blobs: original.blobs, lineage: "mail", seed: 3, night: "2026-11-29")
    let dump = try original.store.dump(lineage: "mail")
    #expect(dump.examples.count == 40)
    #expect(!dump.uses.isEmpty)

    let copy = try BufferFixture()
    try copy.importLines(5, from: 100)  // whatever the lineage held before is replaced
    try copy.store.restore(try LineageDump.decode(dump.encoded, context: "dump"))
    #expect(try copy.store.dump(lineage: "mail").encoded == dump.encoded)

    let a = try SampleStep.run(store: original.store, blobs: original.blobs, lineage: "mail", seed: 3, night: "2026-11-30")
    let b = try SampleStep.run(store: copy.store, blobs: copy.blobs, lineage: "mail", seed: 3, night: "2026-11-30")
    #expect(a.trainSnapshot == b.trainSnapshot)
    #expect(a.heldOutSnapshot == b.heldOutSnapshot)
}

@Test func aDumpOfAnotherFormatIsRefused() throws {
    let fixture = try BufferFixture()
    try fixture.importLines(3)
    var json = try JSON.decode(JSONValue.self, from: fixture.store.dump(lineage: "mail").encoded, context: "dump").objectValue!
    json["format"] = .int(99)
    #expect(throws: CoreError.self) { try LineageDump.decode(JSON.canonical(JSONValue.object(json)), context: "dump") }
}
