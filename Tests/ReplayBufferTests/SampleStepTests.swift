import AdaptCore
import Foundation
import ReplayBuffer
import Testing
import TestSupport

@Test func sameSeedAndSameBufferGiveTheSameSnapshotDigestsOnEitherBackend() throws {
    var reports: [SampleReport] = []
    for backend in Backend.allCases {
        let fixture = try BufferFixture(backend)
        try fixture.importLines(40)
        try fixture.store.setPolicy(lineage: "mail") { $0.maxTokensPerNight = 200 }
        reports.append(try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 42, night: "2026-01-01"))
    }
    #expect(reports[0] == reports[1])
    #expect(reports[0].trainExamples > 0 && reports[0].trainExamples < reports[0].eligible)

    let other = try BufferFixture()
    try other.importLines(40)
    try other.store.setPolicy(lineage: "mail") { $0.maxTokensPerNight = 200 }
    let reseeded = try SampleStep.run(store: other.store, blobs: other.blobs, lineage: "mail", seed: 43, night: "2026-01-01")
    #expect(reseeded.trainSnapshot != reports[0].trainSnapshot)
    #expect(reseeded.heldOutSnapshot == reports[0].heldOutSnapshot)
}

@Test(arguments: Backend.allCases)
func rerunningANightReplacesItsUsesAndReproducesItsSnapshot(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    try fixture.importLines(30)
    try fixture.store.setPolicy(lineage: "mail") { $0.maxUsesPerExample = 1 }
    let first = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 7, night: "n1")
    let again = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 7, night: "n1")
    #expect(first == again)
    let uses = try fixture.store.examples(split: .train).reduce(0) { $0 + $1.uses }
    #expect(uses == first.trainExamples)
}

@Test(arguments: Backend.allCases)
func snapshotListsExamplesByIdWithTheirTextAndWeight(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    let line = #"{"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "P"}, {"role": "assistant", "content": "C"}], "weight": 3}"#
    try fixture.store.setPolicy(lineage: "mail") { $0.minHeldOut = 0; $0.heldOutFraction = 0 }
    _ = try fixture.store.importJSONL(Data(line.utf8), lineage: "mail")
    let report = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 1, night: "n")
    let snapshot = try DatasetSnapshot.load(report.trainSnapshot, from: fixture.blobs)
    let example = try #require(try fixture.store.examples().first)
    #expect(snapshot == [SnapshotExample(id: example.id, system: "S", prompt: "P", completion: "C", weight: 3, tokens: example.tokenCount)])
    let bytes = try fixture.blobs.get(report.trainSnapshot)
    #expect(String(decoding: bytes, as: UTF8.self)
            == "{\"completion\":\"C\",\"id\":\"\(example.id)\",\"prompt\":\"P\",\"system\":\"S\",\"tokens\":\(example.tokenCount),\"weight\":3}\n")
    #expect(report.heldOutExamples == 0 && report.heldOutSnapshot == Digest.sha256(Data()))
}

@Test(arguments: Backend.allCases)
func heavierExamplesAreSampledMoreOften(_ backend: Backend) throws {
    // Two groups of 20 examples, weight 4 and weight 1; 10 are taken a night. Over 40 nights (seeds) the heavy
    // group must be taken far more often (Efraimidis–Spirakis: inclusion grows with weight).
    let fixture = try BufferFixture(backend)
    let heavy = (0..<20).map { #"{"prompt": "h\#($0)", "completion": "heavy \#($0)", "weight": 4}"# }
    let light = (0..<20).map { #"{"prompt": "l\#($0)", "completion": "light \#($0)", "weight": 1}"# }
    _ = try fixture.store.importJSONL(Data((heavy + light).joined(separator: "\n").utf8), lineage: "mail")
    try fixture.store.setPolicy(lineage: "mail") { $0.maxUsesPerExample = 1_000 }
    var heavyTaken = 0, lightTaken = 0
    for seed in 0..<40 {
        let report = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: UInt64(seed),
                                        night: "n\(seed)", policy: SamplePolicy(maxExamples: 10))
        for example in try DatasetSnapshot.load(report.trainSnapshot, from: fixture.blobs) {
            if example.completion.hasPrefix("heavy") { heavyTaken += 1 } else { lightTaken += 1 }
        }
    }
    #expect(heavyTaken + lightTaken == 400)
    #expect(heavyTaken > 2 * lightTaken)
}
