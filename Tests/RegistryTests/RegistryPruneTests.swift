import AdaptCore
import Foundation
import Registry
import Testing
import TestSupport

// `registry prune` (issue 43): adapter files go, rows stay; never the newest N, the active version and its chain of
// parents, nor an adapter a recorded run reads again when replayed.

extension RegistryFixture {
    /// Registers one version of distinct bytes with `parent`.
    func registerOne(parent: AdapterVersion? = nil, bytes: Data? = nil) throws -> AdapterVersion {
        clock.advance(milliseconds: 1000)
        let data = bytes ?? Data("adapter \(clock.nowMilliseconds())".utf8) + Data(repeating: 7, count: 512)
        return try registry.register(adapterData: data, lineage: RegistryFixture.lineage, parent: parent?.reference,
                                     metadata: AdapterMetadata(trainingExamples: 10), metrics: RegistryFixture.gate(.better))
    }
}

@Test(arguments: Backend.allCases)
func pruneDeletesOnlyTheFilesOfOldVersionsOutsideTheActiveChainAndWhatRunsReplay(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    let v1 = try f.registerOne()
    try f.registry.promoteScored(v1.reference)
    let v2 = try f.registerOne(parent: v1)
    try f.registry.promoteScored(v2.reference)
    let candidates = try (3...6).map { _ in try f.registerOne(parent: v2) }
    let needed = candidates[0].adapterDigest  // v3: a recorded run's incumbent, say

    let report = try f.registry.prune(lineage: RegistryFixture.lineage, keep: 1, needed: [needed], dryRun: false)
    #expect(report.deletedVersions.map(\.number) == [4, 5])
    #expect(report.keptVersions.map(\.number) == [1, 2, 3, 6])
    #expect(report.freedBytes == Int64(candidates[1].size + candidates[2].size))
    #expect(try !f.blobs.contains(candidates[1].adapterDigest) && !f.blobs.contains(candidates[2].adapterDigest))
    for kept in [v1, v2, candidates[0], candidates[3]] { #expect(try f.blobs.contains(kept.adapterDigest)) }
    // Rows stay: history and listings still name every version.
    #expect(try f.registry.versions(lineage: RegistryFixture.lineage).count == 6)
    #expect(try f.registry.prunedIDs() == [candidates[1].id, candidates[2].id])
    // A second prune finds nothing more to delete.
    let again = try f.registry.prune(lineage: RegistryFixture.lineage, keep: 1, needed: [needed], dryRun: false)
    #expect(again.deletedVersions.isEmpty && again.freedBytes == 0)
}

@Test(arguments: Backend.allCases)
func aDryRunPruneReportsTheSameButDeletesAndMarksNothing(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    let versions = try (1...4).map { _ in try f.registerOne() }
    let dry = try f.registry.prune(lineage: RegistryFixture.lineage, keep: 2, needed: [], dryRun: true)
    #expect(dry.dryRun && dry.deletedVersions.map(\.number) == [1, 2])
    for v in versions { #expect(try f.blobs.contains(v.adapterDigest)) }
    #expect(try f.registry.prunedIDs().isEmpty)
    let real = try f.registry.prune(lineage: RegistryFixture.lineage, keep: 2, needed: [], dryRun: false)
    #expect(real.deletedVersions == dry.deletedVersions && real.freedBytes == dry.freedBytes)
}

@Test(arguments: Backend.allCases)
func aFileAKeptVersionSharesIsNotDeleted(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    let bytes = Data("the same adapter bytes".utf8) + Data(repeating: 1, count: 300)
    let first = try f.registerOne(bytes: bytes)
    _ = try f.registerOne()
    let last = try f.registerOne(bytes: bytes)
    let report = try f.registry.prune(lineage: RegistryFixture.lineage, keep: 1, needed: [], dryRun: false)
    #expect(report.deletedVersions.map(\.number) == [2])
    #expect(report.keptVersions.map(\.number).contains(first.number))
    #expect(try f.blobs.contains(last.adapterDigest))
}

@Test(arguments: Backend.allCases)
func aPrunedVersionCannotBePromotedOrRolledBackToAndVerifySaysPrunedNotMissing(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    // v1 was active before v2, but v2 was registered without a parent: v1 is outside the active chain.
    let v1 = try f.registerOne()
    try f.registry.promoteScored(v1.reference)
    let v2 = try f.registerOne()
    try f.registry.promoteScored(v2.reference)
    let v3 = try f.registerOne()
    let report = try f.registry.prune(lineage: RegistryFixture.lineage, keep: 0, needed: [], dryRun: false)
    #expect(report.deletedVersions.map(\.number) == [1, 3])
    let before = try f.snapshot()
    #expect(throws: RegistryError.versionPruned(lineage: "mail", version: "v3")) {
        try f.registry.promote(v3.reference, reason: .force)
    }
    #expect(throws: RegistryError.versionPruned(lineage: "mail", version: "v1")) {
        try f.registry.rollback(lineage: RegistryFixture.lineage)
    }
    #expect(try f.snapshot() == before)
    #expect("\(RegistryError.versionPruned(lineage: "mail", version: "v1"))".contains("adapt registry prune"))
    let states = try f.registry.verify().map(\.state)
    #expect(states == [.pruned, .ok, .pruned])
}

@Test(arguments: Backend.allCases)
func theActiveVersionsWeightsParentKeepsItsFile(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    let v1 = try f.registerOne()
    f.clock.advance(milliseconds: 1000)
    let v2 = try f.registry.register(adapterData: Data("warm-started from v1".utf8) + Data(repeating: 3, count: 200),
                                     lineage: RegistryFixture.lineage, trainedFrom: v1.reference,
                                     metadata: AdapterMetadata(trainingExamples: 10), metrics: RegistryFixture.gate(.better))
    try f.registry.promoteScored(v2.reference)
    _ = try f.registerOne()
    let report = try f.registry.prune(lineage: RegistryFixture.lineage, keep: 0, needed: [], dryRun: false)
    #expect(report.deletedVersions.map(\.number) == [3])
    #expect(try f.blobs.contains(v1.adapterDigest))
}

/// A pruned version is never scored again (it cannot be an incumbent or a candidate any more): its cached scores go
/// with its file, so a registry that prunes nightly keeps a bounded score cache; kept versions' and the base's stay.
@Test(arguments: Backend.allCases)
func pruneDropsTheCachedScoresOfTheVersionsWhoseFilesGo(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    let versions = try (1...3).map { _ in try f.registerOne() }
    let cache = try ScoreCache(connection: f.connection, clock: f.clock)
    let model = Digest.sha256("model"), example = Digest.sha256("example")
    let entry = ScoreCache.Entry(example: example, meanNLL: 1.5, tokens: 9)
    for weights in [ScoreCache.Weights.base] + versions.map({ .adapter($0.adapterDigest) }) {
        try cache.store(model: model, weights: weights, entries: [entry])
    }
    let report = try f.registry.prune(lineage: RegistryFixture.lineage, keep: 2, needed: [], dryRun: false)
    #expect(report.deletedVersions.map(\.number) == [1])
    #expect(try cache.lookup(model: model, weights: .adapter(versions[0].adapterDigest), examples: [example]).isEmpty)
    for weights in [ScoreCache.Weights.base, .adapter(versions[1].adapterDigest), .adapter(versions[2].adapterDigest)] {
        #expect(try cache.lookup(model: model, weights: weights, examples: [example])[example] == entry)
    }
}
