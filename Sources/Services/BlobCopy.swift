import AdaptCore
import Foundation

/// Copies blobs between the file store and the PostgreSQL store, checking each digest on both sides: a blob
/// is read from the source (which rehashes it), written to the target, and after the copy every blob the
/// target lists is read back (rehashed again).
public enum BlobCopy {
    public struct Report: Sendable, Encodable, Equatable {
        public let count: Int
        public let bytes: Int
        /// SHA-256 over the sorted `digest size` lines of each side's blobs.
        public let sourceDigest: String
        public let targetDigest: String
        public var matched: Bool { sourceDigest == targetDigest }

        enum CodingKeys: String, CodingKey { case count, bytes, sourceDigest = "source_digest", targetDigest = "target_digest", matched }

        public func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(count, forKey: .count)
            try container.encode(bytes, forKey: .bytes)
            try container.encode(sourceDigest, forKey: .sourceDigest)
            try container.encode(targetDigest, forKey: .targetDigest)
            try container.encode(matched, forKey: .matched)
        }
    }

    /// Copies `digests`, each read (and rehashed) by `read`, into `target`, then lists the target again (`targetDigests`) and rereads
    /// it. A blob that does not hash to its name on either side stops the copy (`CoreError.blobCorrupt`).
    static func copy(_ digests: [Digest], read: (Digest) throws -> Data, to target: any BlobStorage,
                     targetDigests: () throws -> [Digest]) throws -> Report {
        var sourceLines: [String] = []
        var bytes = 0
        for digest in digests {
            let data = try read(digest)
            try target.put(data)
            sourceLines.append("\(digest.hex) \(data.count)")
            bytes += data.count
        }
        let targetLines = try targetDigests().map { "\($0.hex) \(try target.get($0).count)" }
        let report = Report(count: digests.count, bytes: bytes, sourceDigest: listDigest(sourceLines), targetDigest: listDigest(targetLines))
        if !report.matched {
            throw MigrationError.digestMismatch(component: "blobs", table: "blobs", sourceRows: digests.count, targetRows: targetLines.count)
        }
        return report
    }

    private static func listDigest(_ lines: [String]) -> String {
        Digest.sha256(Data(lines.sorted().joined(separator: "\n").utf8)).hex
    }
}
