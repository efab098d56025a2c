import AdaptCore
import Foundation

/// Everything that can go wrong in training, checkpointing and adapter files.
///
/// Each description names the value at fault and the way out; none contains a user's text (prompts and
/// completions never reach an error).
public enum TrainingError: Error, Equatable, CustomStringConvertible {
    /// A configuration value is outside its range.
    case invalidConfiguration(field: String, reason: String)
    /// A line of a JSON Lines dataset is not an example.
    case invalidDataset(file: String, line: Int, reason: String)
    /// The dataset yields nothing to train on.
    case emptyDataset(reason: String)
    /// A file does not start with the expected magic bytes.
    case notThisFormat(file: String, expected: String)
    /// A file was written by a newer version of the format.
    case unsupportedVersion(file: String, version: UInt32, supported: UInt32)
    /// The file ends before its declared length.
    case truncated(file: String, expected: Int, actual: Int)
    /// The stored digest does not match the content.
    case digestMismatch(file: String, expected: String, actual: String)
    /// A field decoded but its value is impossible (negative count, unknown section, shape mismatch).
    case malformed(file: String, field: String, reason: String)
    /// A checkpoint made for another configuration, base model or parameter layout.
    case checkpointMismatch(file: String, field: String, stored: String, current: String, remedy: String)
    /// The loss or the gradient stopped being a finite number.
    case diverged(step: Int, loss: Double, learningRate: Double)
    /// The first step's loss, computed before any update, was not a finite number: the model's weights (or the
    /// adapter training starts from) are to blame, not the learning rate.
    case nonFiniteBeforeAnyUpdate(loss: Double)
    /// Every checkpoint in the store is unreadable.
    case noUsableCheckpoint(location: String, failures: [String])
    /// Wrapping a failure of the shared foundations (file I/O, zstd, blobs).
    case io(String)

    public var description: String {
        switch self {
        case let .invalidConfiguration(field, reason):
            return "training setting \(field) is invalid: \(reason)"
        case let .invalidDataset(file, line, reason):
            return "\(file) line \(line): \(reason); each line must be {\"prompt\": \"…\", \"completion\": \"…\"} with an optional \"weight\""
        case let .emptyDataset(reason):
            return "nothing to train on: \(reason); add examples with a non-empty completion and a positive weight"
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
        case let .checkpointMismatch(file, field, stored, current, remedy):
            return "checkpoint \(file) was written for \(field) \(stored), this run uses \(field) \(current); \(remedy)"
        case let .nonFiniteBeforeAnyUpdate(loss):
            return "the loss of the first step is \(loss) before any update, so the base model (or the adapter training starts from) "
                + "computes non-finite numbers on this data: its weights may hold NaN or infinity; check it with 'adapt score' or "
                + "fetch the model again (the learning rate is not the cause)"
        case let .diverged(step, loss, rate):
            return "training diverged at step \(step) (loss \(loss)) with learning rate \(rate); lower --lr and resume from the last checkpoint or start fresh"
        case let .noUsableCheckpoint(location, failures):
            return "no usable checkpoint in \(location) (\(failures.joined(separator: "; "))); start fresh without --resume"
        case let .io(reason):
            return reason
        }
    }
}
