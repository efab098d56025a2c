import Foundation

/// Failures of the shared foundations: files, blobs, JSON.
public enum CoreError: Error, Equatable, CustomStringConvertible {
    case fileUnreadable(path: String, reason: String)
    case fileUnwritable(path: String, reason: String)
    case blobMissing(Digest)
    case blobCorrupt(expected: Digest, actual: Digest)
    case invalidJSON(context: String, reason: String)

    public var description: String {
        switch self {
        case let .fileUnreadable(path, reason):
            return "cannot read \(path): \(reason)"
        case let .fileUnwritable(path, reason):
            return "cannot write \(path): \(reason); check that the directory exists and is writable"
        case let .blobMissing(digest):
            return "blob \(digest.short) is not in the blob store; it was pruned or the state directory is incomplete"
        case let .blobCorrupt(expected, actual):
            let (named, content) = distinguishingPrefixes(expected.hex, actual.hex)
            return "blob \(named) is corrupt (its content hashes to \(content)); restore it or re-run the step that made it"
        case let .invalidJSON(context, reason):
            return "\(context) is not valid JSON: \(reason)"
        }
    }
}
