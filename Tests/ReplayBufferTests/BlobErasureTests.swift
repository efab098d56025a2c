import AdaptCore
import Foundation
import ReplayBuffer
import Storage
import Testing
import TestSupport

// Every snapshot blob is recorded with the examples it holds, and erasure or expiry of one of them erases the
// blob in the same operation (issue 16).

@Test(arguments: Backend.allCases)
func forgettingAnExampleErasesEverySnapshotThatHeldItAndNoOther(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    try fixture.importLines(12)
    let report = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 7, night: "n1")
    let sampled = try DatasetSnapshot.load(report.trainSnapshot, from: fixture.blobs)
    let heldOut = try DatasetSnapshot.load(report.heldOutSnapshot, from: fixture.blobs)
    let target = try #require(sampled.first)

    let erasure = try fixture.store.erase(.id(target.id), blobs: fixture.blobs)
    #expect(erasure.examples == 1 && erasure.blobs == [report.trainSnapshot])
    #expect(!fixture.blobs.contains(report.trainSnapshot) && erasure.freedBytes > 0)
    #expect(heldOut.isEmpty || fixture.blobs.contains(report.heldOutSnapshot), "a snapshot without it was erased")
    // What the deletion left in the database's files is purged: the log on SQLite, the tables' files on PostgreSQL.
    #expect(backend == .sqlite ? erasure.walTruncated : erasure.tablesRewritten)
    let recorded = try #require(try ReplayStore.erasures(of: [report.trainSnapshot], in: fixture.store.database)[report.trainSnapshot])
    #expect(recorded.reason == .forget && recorded.kind == .trainSnapshot)
    // Not even the erased example's id stays in the blob records.
    #expect(try fixture.store.blobs(holding: [target.id]).isEmpty)
}

@Test(arguments: Backend.allCases)
func expiryErasesTheSnapshotsOfExpiredExamplesWithoutABlobStoreUntilTheNextSweep(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    try fixture.importLines(12)
    let report = try SampleStep.run(store: fixture.store, blobs: fixture.blobs, lineage: "mail", seed: 7, night: "n1")
    fixture.clock.advance(milliseconds: 200 * day)
    let pruned = try PruneStep.run(store: fixture.store, lineage: "mail", now: fixture.clock.nowMilliseconds())
    #expect(pruned.deleted > 0 && pruned.erasedBlobs == 1)
    // Marked erased in the prune's transaction; the file goes at the next sweep (or `adapt gc`).
    #expect(fixture.blobs.contains(report.trainSnapshot))
    #expect(try ReplayStore.erasures(of: [report.trainSnapshot], in: fixture.store.database)[report.trainSnapshot]?.reason == .expiry)
    #expect(try fixture.store.sweepErasedBlobs(fixture.blobs) > 0)
    #expect(!fixture.blobs.contains(report.trainSnapshot))
}

@Test(arguments: Backend.allCases)
func aSnapshotRecordedAfterOneOfItsExamplesWasErasedIsDeletedNotKept(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    try fixture.importLines(4)
    let dump = try fixture.store.dump(lineage: "mail")
    let blob = try fixture.blobs.put(dump.encoded)
    // The erasure falls between the read and a record written in a later transaction.
    #expect(try fixture.store.forget(.id(dump.examples[0].id)) == 1)
    #expect(throws: ReplayError.erasedWhileSnapshotting(blob: blob.short)) {
        try fixture.store.recordBlob(blob, kind: .bufferSnapshot, lineage: "mail", exampleIDs: dump.examples.map(\.id),
                                     blobs: fixture.blobs)
    }
    #expect(!fixture.blobs.contains(blob))
}
