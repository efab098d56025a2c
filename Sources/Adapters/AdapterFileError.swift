import AdaptCore

/// Everything that can be wrong with an adapter file: the bytes a reader got, never its tensors' meaning
/// (whether they fit a model is the reader's question).
///
/// The descriptions are those training's errors gave for the same faults, so a command prints the same line
/// whichever module read the file; none contains a user's text.
public enum AdapterFileError: Error, Equatable, CustomStringConvertible {
    /// The file does not start with the magic bytes `ADAPTLRA`.
    case notThisFormat(file: String, expected: String)
    /// The file was written by a newer version of the format.
    case unsupportedVersion(file: String, version: UInt32, supported: UInt32)
    /// The file ends before its declared length.
    case truncated(file: String, expected: Int, actual: Int)
    /// The stored digest does not match the content.
    case digestMismatch(file: String, expected: String, actual: String)
    /// A field decoded but its value is impossible (a shape, a count, alpha, rank).
    case malformed(file: String, field: String, reason: String)
    /// Reading or writing the file failed.
    case io(String)

    public var description: String {
        switch self {
        case let .notThisFormat(file, expected):
            return "\(file) is not \(expected) (wrong magic bytes); pass the right file or start fresh"
        case let .unsupportedVersion(file, version, supported):
            return "\(file) has format version \(version), this build reads up to \(supported); upgrade adapt or start fresh"
        case let .truncated(file, expected, actual):
            return "\(file) is truncated: \(actual) bytes, expected \(expected); it was cut short while being copied or written"
        case let .digestMismatch(file, expected, actual):
            let (content, stated) = distinguishingPrefixes(actual, expected)
            return "\(file) is corrupt: its content hashes to \(content), the file says \(stated); delete it or restore a copy"
        case let .malformed(file, field, reason):
            return "\(file) is corrupt: field \(field) \(reason); delete it or restore a copy"
        case let .io(reason):
            return reason
        }
    }
}
