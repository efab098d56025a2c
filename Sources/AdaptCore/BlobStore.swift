import Foundation

/// Content-addressed files: each blob is named by the SHA-256 of its bytes and verified when read.
///
/// Layout: `blobs/ab/abcdef…` (two-character fan-out keeps directories small).
public struct BlobStore: Sendable {
    public let root: URL

    public init(root: URL) { self.root = root }

    public func url(for digest: Digest) -> URL {
        root.appendingPathComponent(String(digest.hex.prefix(2))).appendingPathComponent(digest.hex)
    }

    public func contains(_ digest: Digest) -> Bool {
        FileManager.default.fileExists(atPath: url(for: digest).path)
    }

    /// Stores `data` and returns its digest; storing the same bytes twice writes once. A stored copy is kept
    /// only if it still hashes to its name: a damaged or truncated blob (a bad disk, a half-restored backup)
    /// is rewritten from `data`, so storing the bytes again repairs it instead of pointing at the damage.
    @discardableResult
    public func put(_ data: Data) throws -> Digest {
        let digest = Digest.sha256(data)
        let location = url(for: digest)
        if contains(digest), (try? Digest.sha256(fileAt: location)) == digest { return digest }
        try AtomicFile.write(data, to: location)
        return digest
    }

    /// Reads a blob and checks that its bytes still hash to its name.
    public func get(_ digest: Digest) throws -> Data {
        let location = url(for: digest)
        guard let data = FileManager.default.contents(atPath: location.path) else {
            throw CoreError.blobMissing(digest)
        }
        let actual = Digest.sha256(data)
        guard actual == digest else { throw CoreError.blobCorrupt(expected: digest, actual: actual) }
        return data
    }

    /// A blob's bytes without rehashing them, for a reader that hashes them anyway while parsing (an adapter
    /// file, whose own trailing digest is checked in the same pass): hashing 3.7 MB twice costs a hot swap
    /// milliseconds. The caller must compare the digest of what it got with `digest` before using any byte.
    public func getUnverified(_ digest: Digest) throws -> Data {
        guard let data = try AtomicFile.read(url(for: digest)) else { throw CoreError.blobMissing(digest) }
        return data
    }

    /// Every stored digest, sorted; files whose names are not digests (temporaries) are skipped.
    public func all() -> [Digest] {
        let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)?
            .compactMap { ($0 as? URL)?.lastPathComponent } ?? []
        return files.compactMap { Digest(hex: $0) }.sorted()
    }

    public func remove(_ digest: Digest) throws {
        let location = url(for: digest)
        if FileManager.default.fileExists(atPath: location.path) {
            try FileManager.default.removeItem(at: location)
        }
    }
}
