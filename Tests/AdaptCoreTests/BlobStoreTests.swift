import AdaptCore
import Foundation
import Testing
import TestSupport

@Test func puttingBytesWhoseBlobIsCorruptRewritesIt() throws {
    let dir = TemporaryDirectory("blobs")
    let blobs = BlobStore(root: dir.url)
    let bytes = Data("the adapter's bytes".utf8)
    let digest = try blobs.put(bytes)
    try Data("damaged".utf8).write(to: blobs.url(for: digest))
    #expect(throws: CoreError.blobCorrupt(expected: digest, actual: Digest.sha256(Data("damaged".utf8)))) { try blobs.get(digest) }

    #expect(try blobs.put(bytes) == digest)
    #expect(try blobs.get(digest) == bytes)
}

@Test func puttingBytesWhoseBlobIsTruncatedRewritesIt() throws {
    let dir = TemporaryDirectory("blobs")
    let blobs = BlobStore(root: dir.url)
    let bytes = Data(repeating: 7, count: 10_000)
    let digest = try blobs.put(bytes)
    try Data().write(to: blobs.url(for: digest))
    try blobs.put(bytes)
    #expect(try blobs.get(digest) == bytes)
}

@Test func puttingBytesWhoseBlobIsIntactLeavesTheFileAlone() throws {
    let dir = TemporaryDirectory("blobs")
    let blobs = BlobStore(root: dir.url)
    let digest = try blobs.put(Data("same".utf8))
    let before = try FileManager.default.attributesOfItem(atPath: blobs.url(for: digest).path)[.systemFileNumber] as? Int
    try blobs.put(Data("same".utf8))
    let after = try FileManager.default.attributesOfItem(atPath: blobs.url(for: digest).path)[.systemFileNumber] as? Int
    #expect(before != nil && before == after, "an intact blob was replaced")
}
