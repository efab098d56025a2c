import Foundation

/// Content-addressed bytes: stored under their SHA-256, checked against it on every read.
///
/// Two stores conform: `BlobStore`, files in the state directory (the default), and the PostgreSQL store in
/// `Storage`, chunks in the database, for hosts that share only the database. Rows refer to blobs by digest
/// either way.
public protocol BlobStorage: Sendable {
    /// Stores `data` and returns its digest; storing the same bytes twice writes them once.
    @discardableResult
    func put(_ data: Data) throws -> Digest
    /// The bytes named `digest`; `CoreError.blobMissing` when absent, `CoreError.blobCorrupt` when what is
    /// stored no longer hashes to `digest`. Never returns other bytes than those stored.
    func get(_ digest: Digest) throws -> Data
    func contains(_ digest: Digest) throws -> Bool
    /// The bytes as stored, possibly not hashed yet, for a reader that hashes them itself before using any
    /// byte (`BlobStore.getUnverified`). A store that checks on every read anyway returns `get`'s result.
    func getUnverified(_ digest: Digest) throws -> Data
    /// Deletes the blob named `digest` and returns the bytes it held, or nil when it was not stored.
    @discardableResult
    func delete(_ digest: Digest) throws -> Int64?
}

extension BlobStorage {
    public func getUnverified(_ digest: Digest) throws -> Data { try get(digest) }
}
