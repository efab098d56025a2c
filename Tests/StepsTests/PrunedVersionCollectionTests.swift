import AdaptCore
import Foundation
import Registry
import Steps
import Storage
import Testing
import TestSupport

/// `adapt gc` after `registry prune` (issue 43): a pruned version owns no file, so bytes stored again under its
/// digest are collected like any unowned blob, while a kept version's file stays.
@Test func gcCollectsAFileOnlyAPrunedVersionNamesAndKeepsTheKeptVersionsFile() throws {
    let dir = TemporaryDirectory("pruned-collection")
    try dir.state.create()
    let database = try Database(path: dir.state.database.path)
    let blobs = dir.state.blobs
    let registry = try AdapterRegistry(database: database, blobs: blobs)
    let lineage = ShortIdentifier("mail")!
    let old = Data("old adapter".utf8) + Data(repeating: 1, count: 100)
    let new = Data("new adapter".utf8) + Data(repeating: 2, count: 100)
    let first = try registry.register(adapterData: old, lineage: lineage, metadata: AdapterMetadata())
    let second = try registry.register(adapterData: new, lineage: lineage, metadata: AdapterMetadata())
    let report = try registry.prune(lineage: lineage, keep: 1, needed: [], dryRun: false)
    #expect(report.deletedVersions.map(\.id) == [first.id] && !blobs.contains(first.adapterDigest))
    // The same bytes stored again (a step writing an identical adapter) are owned by nothing.
    _ = try blobs.put(old)
    let collected = try BlobCollector(database: database, blobs: blobs).collect(graceMilliseconds: 0)
    #expect(collected.deletedBlobs == 1 && collected.freedBytes == Int64(old.count))
    #expect(!blobs.contains(first.adapterDigest) && blobs.contains(second.adapterDigest))
}
