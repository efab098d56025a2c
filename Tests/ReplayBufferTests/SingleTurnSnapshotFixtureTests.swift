import AdaptCore
import Foundation
import ReplayBuffer
import Testing
import TestSupport

/// Single-turn examples keep their ids and encode byte for byte as they did before conversations were stored
/// whole, so the digests recorded by earlier runs (the prune step's buffer snapshot, the sample step's dataset
/// snapshots) still name the same bytes and those runs replay equal. The fixture and digests below were made
/// before multi-turn storage existed.
@Suite struct SingleTurnSnapshotFixtureTests {
    static let lines = """
        {"prompt":"when is the meeting","completion":"Thursday at ten, as usual."}
        {"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"lunch?"},{"role":"assistant","content":"Sure, noon."}]}
        {"messages":[{"role":"user","content":"ship it?"},{"role":"assistant","content":"Yes, tonight."}],"source":"chat","weight":2}
        {"text":"Cheers, Ana"}
        {"prompt":"call me","completion":"Ring +44 20 7946 0958 or ana@example.com."}
        """

    static let dumpDigest = "b4aa74a9a2134c8f79e30266725acec49a1b48cf50671e8c4f0e84d5bfcfa3c1"

    static func fixture() throws -> Data {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/single-turn-dump.json")
        return try Data(contentsOf: url)
    }

    @Test(arguments: Backend.allCases)
    func aSingleTurnBufferDumpedBeforeConversationsRestoresAndSamplesToTheSameDigests(_ backend: Backend) throws {
        let bytes = try Self.fixture()
        #expect(Digest.sha256(bytes).hex == Self.dumpDigest)
        let fixture = try BufferFixture(backend)
        try fixture.store.restore(try LineageDump.decode(bytes, context: "fixture"))
        #expect(Digest.sha256(try fixture.store.dump(lineage: "mail").encoded).hex == Self.dumpDigest)
        // Sampled as it was then, under the held-out rule of that time.
        let sample = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 7, night: "2026-11-30",
                                        policy: SamplePolicy(heldOutRule: .halfCapped))
        #expect(sample.trainSnapshot.hex == "f9c96276351e3c5c3a784cbe6bd74a7ba5c00fa9d9734d8a047cee714633047b")
        #expect(sample.heldOutSnapshot.hex == "ecff82e99bdae392a5271a03cb8e1ea666cb6640d826b8156d3c4b97c43aa441")
    }

    @Test(arguments: Backend.allCases)
    func singleTurnLinesImportUnderTheIdsTheyHadBefore(_ backend: Backend) throws {
        let dump = try LineageDump.decode(try Self.fixture(), context: "fixture")
        let fixture = try BufferFixture(backend)
        _ = try fixture.store.importJSONL(Data(Self.lines.utf8), lineage: "mail")
        let stored = try fixture.store.dump(lineage: "mail").examples
        #expect(stored.map(\.id) == dump.examples.map(\.id))
        #expect(stored.map(\.tokenCount) == dump.examples.map(\.tokenCount))
    }

    @Test func aSnapshotLineWithoutTurnsEncodesAsBefore() {
        let lines = [SnapshotExample(id: "a1", system: nil, prompt: "p", completion: "c", weight: 1, tokens: 2),
                     SnapshotExample(id: "b2", system: "s", prompt: "", completion: "t", weight: 0.5, tokens: 1)]
        #expect(String(decoding: DatasetSnapshot.encode(lines), as: UTF8.self) ==
            "{\"completion\":\"c\",\"id\":\"a1\",\"prompt\":\"p\",\"tokens\":2,\"weight\":1}\n"
            + "{\"completion\":\"t\",\"id\":\"b2\",\"prompt\":\"\",\"system\":\"s\",\"tokens\":1,\"weight\":0.5}\n")
    }
}
