import AdaptCore
import Foundation
import ReplayBuffer
import Storage
import Testing
import TestSupport

/// Quarantine (issue 26, item 6): examples of a source a worse night blamed are kept out of training until
/// released or erased; the held-out set is never touched.
@Suite struct QuarantineTests {
    /// `mail` with 20 examples of source `good` and 12 of source `bad`, all train (no held-out fraction, no
    /// minimum), each allowed 100 nights.
    static func fixture(_ backend: Backend) throws -> BufferFixture {
        let f = try BufferFixture(backend)
        try f.store.setPolicy(lineage: "mail") { p in
            p.heldOutFraction = 0
            p.minHeldOut = 0
            p.maxUsesPerExample = 100
        }
        var options = ImportOptions()
        options.source = "good"
        _ = try f.store.importJSONL(BufferFixture.lines(20), lineage: "mail", options: options)
        options.source = "bad"
        _ = try f.store.importJSONL(BufferFixture.lines(12, from: 100), lineage: "mail", options: options)
        return f
    }

    static func quarantine(_ f: BufferFixture, _ sources: [String], lineage: String = "mail") throws -> Int {
        try f.store.database.transaction {
            try ReplayStore.quarantine(sources: sources, lineage: lineage, night: "2026-12-05", now: f.clock.nowMilliseconds(),
                                       in: f.store.database)
        }
    }

    /// The ids of each night's training sample, over `nights` nights.
    static func sampledIDs(_ f: BufferFixture, nights: ClosedRange<Int>) throws -> Set<String> {
        var ids = Set<String>()
        for night in nights {
            let report = try SampleStep.run(store: f.store, blobs: f.blobs, lineage: "mail", seed: 7,
                                            night: "2026-12-\(String(format: "%02d", night))")
            ids.formUnion(try DatasetSnapshot.load(report.trainSnapshot, from: f.blobs).map(\.id))
        }
        return ids
    }

    static func ids(_ f: BufferFixture, source: String) throws -> Set<String> {
        Set(try f.store.examples(lineage: "mail").filter { $0.source == source }.map(\.id))
    }

    @Test(arguments: Backend.allCases)
    func quarantinedExamplesAreNeverSampled(_ backend: Backend) throws {
        let f = try Self.fixture(backend)
        #expect(try Self.quarantine(f, ["bad"]) == 12)
        let sampled = try Self.sampledIDs(f, nights: 1...6)
        #expect(sampled.isDisjoint(with: try Self.ids(f, source: "bad")))
        #expect(sampled == (try Self.ids(f, source: "good")), "every other example is still sampled")
        let marked = try f.store.examples(lineage: "mail").filter { $0.quarantinedAt != nil }
        #expect(marked.count == 12 && marked.allSatisfy { $0.source == "bad" && $0.quarantinedNight == "2026-12-05" })
        #expect(try f.store.stats(lineage: "mail").first?.quarantined == 12)
    }

    @Test(arguments: Backend.allCases)
    func releaseMakesQuarantinedExamplesSampleableAgain(_ backend: Backend) throws {
        let f = try Self.fixture(backend)
        _ = try Self.quarantine(f, ["bad"])
        let released = try f.store.release(lineage: "mail", source: "bad")
        #expect(released.lineage == "mail" && released.source == "bad" && released.released == 12 && released.examples == 12)
        #expect(try f.store.stats(lineage: "mail").first?.quarantined == 0)
        let sampled = try Self.sampledIDs(f, nights: 1...6)
        #expect(try Self.ids(f, source: "bad").isSubset(of: sampled))
        // Releasing again finds nothing quarantined and says so with 0; it is not an error.
        #expect(try f.store.release(lineage: "mail", source: "bad").released == 0)
    }

    @Test(arguments: Backend.allCases)
    func forgetRemovesQuarantinedExamples(_ backend: Backend) throws {
        let f = try Self.fixture(backend)
        _ = try Self.quarantine(f, ["bad"])
        #expect(try f.store.forget(.source("bad", lineage: "mail"), blobs: f.blobs) == 12)
        #expect(try Self.ids(f, source: "bad").isEmpty)
        #expect(try f.store.stats(lineage: "mail").first?.quarantined == 0)
        #expect(throws: ReplayError.unknownSource("bad", lineage: "mail")) { try f.store.release(lineage: "mail", source: "bad") }
    }

    @Test(arguments: Backend.allCases)
    func heldOutExamplesAreNeverQuarantinedNorMovedInByTheTopUp(_ backend: Backend) throws {
        let f = try BufferFixture(backend)
        var options = ImportOptions()
        options.source = "bad"
        options.heldOut = true
        _ = try f.store.importJSONL(BufferFixture.lines(4), lineage: "mail", options: options)
        options.heldOut = false
        try f.store.setPolicy(lineage: "mail") { p in p.heldOutFraction = 0; p.minHeldOut = 0 }
        _ = try f.store.importJSONL(BufferFixture.lines(6, from: 50), lineage: "mail", options: options)
        #expect(try Self.quarantine(f, ["bad"]) == 6, "only the training examples are marked")
        #expect(try f.store.examples(lineage: "mail", split: .heldOut).allSatisfy { $0.quarantinedAt == nil })

        // A minimum raised later tops the held-out set up from never-trained examples: not from quarantined ones.
        try f.store.setPolicy(lineage: "mail") { p in p.minHeldOut = 8 }
        #expect(try f.store.examples(lineage: "mail", split: .heldOut).count == 4)
        let report = try SampleStep.run(store: f.store, blobs: f.blobs, lineage: "mail", seed: 1, night: "2026-12-06")
        #expect(report.heldOutExamples == 4 && report.trainExamples == 0)
    }

    @Test(arguments: Backend.allCases)
    func releaseOfAnUnknownLineageOrSourceIsAnErrorThatChangesNothing(_ backend: Backend) throws {
        let f = try Self.fixture(backend)
        _ = try Self.quarantine(f, ["bad"])
        let before = try f.store.examples(lineage: "mail")
        #expect(throws: ReplayError.unknownLineage("post")) { try f.store.release(lineage: "post", source: "bad") }
        #expect(throws: ReplayError.unknownSource("nope", lineage: "mail")) { try f.store.release(lineage: "mail", source: "nope") }
        #expect(throws: ReplayError.invalidLineage("no/such")) { try f.store.release(lineage: "no/such", source: "bad") }
        #expect(try f.store.examples(lineage: "mail") == before)
    }

    @Test(arguments: Backend.allCases)
    func aBufferSnapshotCarriesTheQuarantineSoARestoredBufferSamplesTheSame(_ backend: Backend) throws {
        let f = try Self.fixture(backend)
        let plain = try f.store.dump(lineage: "mail")
        #expect(plain.format == LineageDump.formatVersion, "a buffer without quarantine dumps as before")
        #expect(!String(decoding: plain.encoded, as: UTF8.self).contains("quarantined"))

        _ = try Self.quarantine(f, ["bad"])
        let dump = try f.store.dump(lineage: "mail")
        #expect(dump.format == LineageDump.quarantineFormatVersion)
        let decoded = try LineageDump.decode(dump.encoded, context: "dump")
        #expect(decoded == dump)

        let other = try BufferFixture(backend)
        try other.store.restore(decoded)
        #expect(try other.store.dump(lineage: "mail").encoded == dump.encoded)
        let here = try SampleStep.run(store: f.store, blobs: f.blobs, lineage: "mail", seed: 3, night: "2026-12-09")
        let there = try SampleStep.run(store: other.store, blobs: other.blobs, lineage: "mail", seed: 3, night: "2026-12-09")
        #expect(here == there)
    }
}


@Test(arguments: Backend.allCases)
func releaseThroughTheExecutablePrintsJSONAndRefusesAnUnknownLineageOrSource(backend: Backend) throws {
    let adapt = try AdaptData(backend)
    // The command line's import fills the held-out set to the gate's 10 first: 6 of the 16 stay in training.
    let file = try adapt.write("bad.jsonl", String(decoding: BufferFixture.lines(16), as: UTF8.self))
    #expect(try adapt.run(["data", "policy", "--lineage", "mail", "--held-out-fraction", "0"]).status == 0)
    #expect(try adapt.run(["data", "import", file, "--lineage", "mail", "--source", "bad"]).status == 0)
    let database: any SQLConnection = backend == .postgres ? try PostgresConnection(adapt.database[1])
        : try Database(path: adapt.directory.url.appendingPathComponent("state/adapt.sqlite").path, durability: .normal)
    _ = try ReplayStore(database: database)
    #expect(try database.transaction {
        try ReplayStore.quarantine(sources: ["bad"], lineage: "mail", night: "2026-12-05", now: 1, in: database)
    } == 6)
    #expect(try adapt.json(["data", "stats", "--lineage", "mail"]).arrayValue?.first?["quarantined"] == .int(6))
    let listed = try adapt.json(["data", "list", "--lineage", "mail"]).arrayValue ?? []
    #expect(listed.count == 16)
    #expect(listed.allSatisfy { ($0["quarantined"] == .bool(true)) == ($0["split"] == .string("train")) }, "held-out examples were quarantined")
    #expect(listed.filter { $0["quarantined_night"] == .string("2026-12-05") }.count == 6)

    for (arguments, status, message) in [
        (["--lineage", "post", "--source", "bad"], Int32(1), "no data or policy is stored for lineage post"),
        (["--lineage", "mail", "--source", "good"], 1, "lineage mail holds no example of source 'good'"),
        (["--lineage", "no/such", "--source", "bad"], 2, "is not a valid name"),
        (["--lineage", "mail"], 2, "missing --source"),
    ] {
        let result = try adapt.run(["data", "release"] + arguments)
        #expect(result.status == status, "\(arguments): \(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }
    #expect(try adapt.json(["data", "stats", "--lineage", "mail"]).arrayValue?.first?["quarantined"] == .int(6), "a refused release changed something")

    let released = try adapt.json(["data", "release", "--lineage", "mail", "--source", "bad"])
    #expect(released == .object(["lineage": .string("mail"), "source": .string("bad"), "released": .int(6), "examples": .int(16)]))
    #expect(try adapt.json(["data", "stats", "--lineage", "mail"]).arrayValue?.first?["quarantined"] == .int(0))
    #expect(try adapt.json(["data", "list", "--lineage", "mail"]).arrayValue?.allSatisfy { $0["quarantined"] == .bool(false) } == true)
}
