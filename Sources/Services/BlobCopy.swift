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
        public let matched: Bool

        init(count: Int, bytes: Int, sourceLines: [String], targetLines: [String]) {
            self.count = count
            self.bytes = bytes
            sourceDigest = Self.digest(sourceLines)
            targetDigest = Self.digest(targetLines)
            matched = sourceDigest == targetDigest
        }

        private static func digest(_ lines: [String]) -> String {
            Digest.sha256(Data(lines.sorted().joined(separator: "\n").utf8)).hex
        }

        enum CodingKeys: String, CodingKey { case count, bytes, sourceDigest = "source_digest", targetDigest = "target_digest", matched }
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
        let report = Report(count: digests.count, bytes: bytes, sourceLines: sourceLines, targetLines: targetLines)
        if !report.matched {
            throw MigrationError.digestMismatch(component: "blobs", table: "blobs", sourceRows: digests.count, targetRows: targetLines.count)
        }
        return report
    }
}
