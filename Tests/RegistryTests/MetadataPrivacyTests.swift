import AdaptCore
import Foundation
import Registry
import Storage
import Testing
import TestSupport

/// Training strings that must never reach the registry (DESIGN.md, Privacy).
let trainingStrings = [
    "Dear Ms. Okafor, the quarterly numbers are attached.",
    "Remind me to call Grandma about the Tuesday dinner",
    "My flight lands at 18:40, pick me up at gate B",
    "Okafor",
    "Grandma",
]

@Test(arguments: Backend.allCases)
func storedMetadataContainsNoTrainingText(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    // What the pipeline derives from the training set: counts, a date range, digests.
    let metadata = AdapterMetadata(
        baseModel: Digest.sha256("model bytes"), chatConvention: ShortIdentifier("chatml")!,
        trainingExamples: trainingStrings.count, heldOutExamples: 2,
        trainingTokens: trainingStrings.reduce(0) { $0 + $1.split(separator: " ").count },
        dataFrom: 1_767_225_600_000, dataTo: 1_767_312_000_000,
        dataset: Digest.sha256(trainingStrings.joined(separator: "\n")),
        training: TrainingSummary(rank: 8, loraAlpha: 16, learningRate: 1e-4, steps: 40, batchSize: 4, seed: 42,
                                  blasThreads: 1, targetModules: [ShortIdentifier("attn_q")!, ShortIdentifier("attn_v")!]))
    let version = try f.registry.register(adapterData: Data(repeating: 7, count: 64), lineage: RegistryFixture.lineage,
                                          metadata: metadata, metrics: RegistryFixture.gate(.better))
    try f.registry.promoteScored(version.reference)
    let cache = try ScoreCache(connection: f.connection, clock: f.clock)
    try cache.store(model: Digest.sha256("model bytes"), weights: .adapter(version.adapterDigest),
                    entries: trainingStrings.map { ScoreCache.Entry(example: Digest.sha256($0), meanNLL: 1.5, tokens: 9) })

    // Every text cell of every registry table, and the raw database and WAL bytes.
    var stored: [String] = []
    for table in ["registry_versions", "registry_active", "registry_history", "score_cache"] {
        for row in try f.connection.query("SELECT * FROM \(table)") {
            for column in ["lineage", "metadata", "metrics", "adapter_digest", "reason", "bypassed", "actor",
                           "model_digest", "adapter", "example_digest"] {
                if let text = row.string(column) { stored.append(text) }
            }
        }
    }
    #expect(stored.contains { $0.contains("chatml") })  // the scan does see the metadata
    for secret in trainingStrings {
        #expect(!stored.contains { $0.localizedCaseInsensitiveContains(secret) }, "'\(secret)' reached the registry")
    }
    switch backend {
    case .sqlite:
        let path = f.dir.state.database.path
        let raw = (FileManager.default.contents(atPath: path) ?? Data()) + (FileManager.default.contents(atPath: path + "-wal") ?? Data())
        for secret in trainingStrings {
            #expect(raw.range(of: Data(secret.utf8)) == nil, "'\(secret)' is in the database file")
        }
    case .postgres:
        // Every row of every table as the server prints it; blob chunks print as hex, so search the hex too.
        var rows = ""
        for table in try f.connection.query("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()") {
            for row in try f.connection.query("SELECT t::text AS row FROM \(table.string("table_name")!) t") {
                rows += (row.string("row") ?? "") + "\n"
            }
        }
        #expect(rows.contains("chatml"))
        for secret in trainingStrings {
            let hex = secret.utf8.map { String(format: "%02x", $0) }.joined()
            #expect(!rows.localizedCaseInsensitiveContains(secret) && !rows.contains(hex), "'\(secret)' is in the database")
        }
    }
}

@Test func identifiersRefuseSentencesAndAddresses() throws {
    for text in ["Dear Ms. Okafor", "a@b.example", "", String(repeating: "a", count: 65), "-lead", "mail/v1", "naïve"] {
        #expect(ShortIdentifier(text) == nil, "\(text)")
    }
    for text in ["mail", "chatml", "attn_q", "v1.2-rc", String(repeating: "a", count: 64)] {
        #expect(ShortIdentifier(text) != nil, "\(text)")
    }
    // Stored metadata with free text in an identifier field does not decode.
    let bad = #"{"chat_convention":"Dear Ms. Okafor","held_out_examples":0,"training_examples":0,"training_tokens":0}"#
    #expect(throws: (any Error).self) { try JSON.decode(AdapterMetadata.self, from: bad, context: "test") }
}
