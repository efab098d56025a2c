import AdaptCore

/// Why a run could not be exported to a bundle, or a bundle could not be replayed. Descriptions name the
/// field, digest or path that is wrong and the way out; never a user's text.
public enum RunBundleError: Error, Equatable, CustomStringConvertible {
    /// The run's buffer snapshot holds examples and `--include-user-data` was not given.
    case holdsUserData(run: String, lineage: String, examples: Int)
    /// The file does not start with the bundle's magic bytes.
    case notABundle(path: String)
    /// The compressed document cannot be read back whole (cut short, or bytes changed).
    case damaged(path: String, reason: String)
    /// The compressed document declares or decodes to more than a bundle may hold (a decompression bomb).
    case tooLarge(path: String, compressedBytes: Int, limit: Int, declared: UInt64?)
    /// The file is larger than any bundle's document can compress to.
    case fileTooLarge(path: String, bytes: Int, limit: Int)
    /// A name in the document is not a plain name (a path, a control character, a dot file …).
    case unsafeName(path: String, field: String, problem: String)
    case unsupportedVersion(found: Int, supported: Int)
    /// A recorded input blob the bundle should carry is absent.
    case blobMissing(step: String, field: String, digest: Digest)
    /// A carried blob's bytes no longer hash to the digest the run recorded.
    case blobAltered(step: String, field: String, expected: Digest, actual: Digest)
    case modelMissing(path: String)
    /// The model file given to replay is not the one the run was recorded with.
    case modelDigestDiffers(path: String, expected: Digest, actual: Digest)

    public var description: String {
        switch self {
        case let .holdsUserData(run, lineage, examples):
            return "\(run) read the replay buffer of lineage \(lineage), which holds \(examples) example(s) of user text; "
                + "a bundle would carry them off this machine. Pass --include-user-data to export them anyway "
                + "(the bundle records that it holds user data)"
        case let .notABundle(path):
            return "\(path) is not a run bundle (it does not start with the bundle's magic bytes); 'adapt run export' writes one"
        case let .damaged(path, reason):
            return "the run bundle \(path) is damaged or truncated (\(reason)); export it again with 'adapt run export'"
        case let .tooLarge(path, compressedBytes, limit, declared):
            let document = declared.map { "declares \($0) bytes" } ?? "decompresses to more than that"
            return "the run bundle \(path) is refused: a bundle of \(compressedBytes) compressed bytes may decompress to at most "
                + "\(limit) bytes and its document \(document), as a decompression bomb would; 'adapt run export' never writes "
                + "one, export the run again"
        case let .fileTooLarge(path, bytes, limit):
            return "the run bundle \(path) is refused unread: it has \(bytes) bytes, more than the \(limit) of the largest bundle; "
                + "pass a file 'adapt run export' wrote"
        case let .unsafeName(path, field, problem):
            return "the run bundle \(path) is refused: its \(field) \(problem), and a name there is never a path; "
                + "it was not written by 'adapt run export', export the run again"
        case let .unsupportedVersion(found, supported):
            return "the run bundle has format version \(found); this adapt reads version \(supported)"
        case let .blobMissing(step, field, digest):
            return "the run bundle lacks the blob \(digest.short) that step \(step) read (\(field)); export it again"
        case let .blobAltered(step, field, expected, actual):
            return "the blob of step \(step)'s \(field) in the run bundle was altered: its SHA-256 is \(actual.hex), "
                + "the run recorded \(expected.hex); export the run again"
        case let .modelMissing(path):
            return "cannot replay: no model file at \(path); pass --model with the base model the run was recorded with"
        case let .modelDigestDiffers(path, expected, actual):
            return "cannot replay: the model at \(path) has SHA-256 \(actual.hex), the run was recorded with \(expected.hex); "
                + "pass --model with that file"
        }
    }
}
