import AdaptCore

/// Rehashing every adapter file (`adapt registry verify`).
extension AdapterRegistry {
    public enum BlobState: String, Sendable, Codable {
        case ok, missing, corrupt
        /// The file was deleted on purpose by `adapt registry prune`: not a fault.
        case pruned
    }

    public struct Verification: Sendable, Equatable {
        public let version: AdapterVersion
        public let state: BlobState
    }

    /// Reads and rehashes the adapter of every version (of `lineage` when given) not pruned. Changes nothing.
    public func verify(lineage: ShortIdentifier? = nil) throws -> [Verification] {
        let pruned = try prunedIDs()
        return try versions(lineage: lineage).map { version in
            if pruned.contains(version.id) { return Verification(version: version, state: .pruned) }
            do {
                _ = try blobs.get(version.adapterDigest)
                return Verification(version: version, state: .ok)
            } catch CoreError.blobMissing {
                return Verification(version: version, state: .missing)
            } catch CoreError.blobCorrupt {
                return Verification(version: version, state: .corrupt)
            }
        }
    }
}
