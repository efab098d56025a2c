import AdaptCore
import Foundation
import ReplayBuffer
import Storage
import Testing
import TestSupport

/// A lineage's buffer, dumped and restored elsewhere, samples exactly as the original does (what replay needs).
@Test(arguments: Backend.allCases)
func aRestoredDumpSamplesTheSameSnapshotsAsTheOriginal(_ backend: Backend) throws {
    let original = try BufferFixture(backend)
    try original.importLines(40)
    _ = try original.store.setPolicy(lineage: "mail") { $0.maxUsesPerExample = 2 }
    _ = try SampleStep.run(store: original.store, blobs: original.blobs, lineage: "mail", seed: 3, night: "2026-11-29")
    let dump = try original.store.dump(lineage: "mail")
    #expect(dump.examples.count == 40)
    #expect(!dump.uses.isEmpty)

    let copy = try BufferFixture(backend)
    try copy.importLines(5, from: 100)  // whatever the lineage held before is replaced
    try copy.store.restore(try LineageDump.decode(dump.encoded, context: "dump"))
    #expect(try copy.store.dump(lineage: "mail").encoded == dump.encoded)

    let a = try SampleStep.run(store: original.store, blobs: original.blobs, lineage: "mail", seed: 3, night: "2026-11-30")
    let b = try SampleStep.run(store: copy.store, blobs: copy.blobs, lineage: "mail", seed: 3, night: "2026-11-30")
    #expect(a.trainSnapshot == b.trainSnapshot)
    #expect(a.heldOutSnapshot == b.heldOutSnapshot)
}

@Test(arguments: Backend.allCases)
func aDumpOfAnotherFormatIsRefused(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    try fixture.importLines(3)
    var json = try JSON.decode(JSONValue.self, from: fixture.store.dump(lineage: "mail").encoded, context: "dump").objectValue!
    json["format"] = .int(99)
    #expect(throws: CoreError.self) { try LineageDump.decode(JSON.canonical(JSONValue.object(json)), context: "dump") }
}

@Test(arguments: Backend.allCases)
func aDumpHoldingConversationsRestoresEveryTurnAndSamplesTheSame(_ backend: Backend) throws {
    let original = try BufferFixture(backend)
    try original.importLines(10)
    let conversation = #"{"messages":[{"role":"user","content":"q1"},{"role":"assistant","content":"a1"},"#
        + #"{"role":"user","content":"q2"},{"role":"assistant","content":"a2"}]}"#
    _ = try original.store.importJSONL(Data(conversation.utf8), lineage: "mail")
    let dump = try original.store.dump(lineage: "mail")
    // A reader that knows only the single-exchange format refuses it instead of cutting the conversation.
    #expect(dump.format == LineageDump.conversationsFormatVersion)
    #expect(dump.examples.compactMap(\.turns).map { $0.map(\.content) } == [["q1", "a1", "q2", "a2"]])

    let copy = try BufferFixture(backend)
    try copy.store.restore(try LineageDump.decode(dump.encoded, context: "dump"))
    #expect(try copy.store.dump(lineage: "mail").encoded == dump.encoded)
    #expect(try copy.store.examples(lineage: "mail").compactMap(\.turns).count == 1)
    let a = try SampleStep.run(store: original.store, blobs: original.blobs, lineage: "mail", seed: 3, night: "2026-11-30")
    let b = try SampleStep.run(store: copy.store, blobs: copy.blobs, lineage: "mail", seed: 3, night: "2026-11-30")
    #expect(a.trainSnapshot == b.trainSnapshot && a.heldOutSnapshot == b.heldOutSnapshot)

    var json = try JSON.decode(JSONValue.self, from: dump.encoded, context: "dump").objectValue!
    json["format"] = .int(LineageDump.formatVersion)
    #expect(throws: CoreError.self) { try LineageDump.decode(JSON.canonical(JSONValue.object(json)), context: "dump") }
}

@Test(arguments: Backend.allCases)
func aSnapshotCarriesEveryTurnOfAConversation(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    let conversation = #"{"messages":[{"role":"system","content":"s"},{"role":"user","content":"q1"},"#
        + #"{"role":"assistant","content":"a1"},{"role":"user","content":"q2"},{"role":"assistant","content":"a2"}]}"#
    _ = try fixture.store.importJSONL(Data(conversation.utf8), lineage: "mail", options: { var o = ImportOptions(); o.heldOut = true; return o }())
    let sample = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 1, night: "2026-11-30")
    let lines = try DatasetSnapshot.load(sample.heldOutSnapshot, from: fixture.blobs)
    #expect(lines.count == 1)
    #expect(lines.first?.turns?.map(\.role) == [.system, .user, .assistant, .user, .assistant])
    #expect(lines.first?.conversation.map(\.content) == ["s", "q1", "a1", "q2", "a2"])
    #expect(lines.first?.prompt == "q2" && lines.first?.completion == "a2" && lines.first?.system == "s")
}
