import AdaptCore
import Foundation

/// What an adapter file says about itself: enough for a session to refuse a mismatched base model or chat
/// convention, and for a person to see how it was made. Counts, settings, metrics and digests only: never a
/// prompt, a completion or any other user text, and never a time, so equal weights give equal files.
public struct AdapterFileMetadata: Sendable, Equatable, Codable {
    public var baseModelDigest: Digest
    /// The chat convention prompts were formatted with (e.g. "chatml").
    public var chatConvention: String
    /// Digest of the chat template text the formatter followed.
    public var templateDigest: Digest?
    public var targets: [String]
    public var rank: Int
    public var alpha: Float
    /// Optimizer steps taken.
    public var steps: Int
    public var trainingExamples: Int
    public var heldOutExamples: Int
    /// Examples cut to the maximum length.
    public var truncatedExamples: Int
    /// Tokens fed through the model while training.
    public var trainingTokens: Int
    /// Named figures, e.g. `final_loss`, `best_heldout_loss`.
    public var metrics: [String: Double]
    /// The settings that decided the numbers (`TrainingConfiguration.numericSettings`) and their digest.
    public var trainingConfiguration: JSONValue
    public var trainingConfigurationDigest: Digest

    public init(baseModelDigest: Digest, chatConvention: String, templateDigest: Digest?, targets: [String], rank: Int,
                alpha: Float, steps: Int, trainingExamples: Int, heldOutExamples: Int, truncatedExamples: Int,
                trainingTokens: Int, metrics: [String: Double], trainingConfiguration: JSONValue,
                trainingConfigurationDigest: Digest) {
        self.baseModelDigest = baseModelDigest
        self.chatConvention = chatConvention
        self.templateDigest = templateDigest
        self.targets = targets
        self.rank = rank
        self.alpha = alpha
        self.steps = steps
        self.trainingExamples = trainingExamples
        self.heldOutExamples = heldOutExamples
        self.truncatedExamples = truncatedExamples
        self.trainingTokens = trainingTokens
        self.metrics = metrics
        self.trainingConfiguration = trainingConfiguration
        self.trainingConfigurationDigest = trainingConfigurationDigest
    }

    /// The LoRA settings the adapter applies with; dropout is 0 because it only exists in training (the
    /// dropout a run used is in `trainingConfiguration`).
    public var settings: AdapterSettings { AdapterSettings(rank: rank, alpha: alpha, dropout: 0, targets: targets) }

    enum CodingKeys: String, CodingKey {
        case baseModelDigest = "base_model_digest", chatConvention = "chat_convention", templateDigest = "template_digest"
        case targets, rank, alpha, steps, metrics
        case trainingExamples = "training_examples", heldOutExamples = "held_out_examples"
        case truncatedExamples = "truncated_examples", trainingTokens = "training_tokens"
        case trainingConfiguration = "training_configuration", trainingConfigurationDigest = "training_configuration_digest"
    }
}

/// A trained LoRA adapter: metadata and the named tensors, in adapt's own small file format.
///
/// File format (little-endian), version 1:
///
///     offset  size  field
///          0     8  magic "ADAPTLRA"
///          8     4  format version (1)
///         12     4  header length H
///         16     H  header: canonical JSON {"metadata": …, "tensors": [{"name", "shape"}, …]}
///       16+H     …  every tensor's float32 values, in header order
///     end-32    32  SHA-256 of every byte before it (the integrity check)
///
/// The header is canonical JSON (sorted keys) with no timestamp, so two runs that computed the same weights
/// under the same configuration write the same bytes. The adapter's digest is the SHA-256 of the whole file,
/// the name the blob store and the registry give it.
public struct AdapterFile: Sendable, Equatable {
    public static let magic: [UInt8] = Array("ADAPTLRA".utf8)
    public static let version: UInt32 = 1

    public var metadata: AdapterFileMetadata
    public var tensors: NamedTensors

    public init(metadata: AdapterFileMetadata, tensors: NamedTensors) {
        self.metadata = metadata
        self.tensors = tensors
    }

    struct Header: Codable {
        struct Tensor: Codable { var name: String; var shape: [Int] }
        var metadata: AdapterFileMetadata
        var tensors: [Tensor]
    }

    /// The file's bytes and its digest (SHA-256 of all of them).
    public func encoded() -> (data: Data, digest: Digest) {
        let header = Header(metadata: metadata,
                            tensors: zip(tensors.names, tensors.shapes).map { Header.Tensor(name: $0, shape: $1) })
        let json = JSON.canonical(header)
        var data = Data()
        data.reserveCapacity(Self.fixedHeaderSize + json.count + 4 * tensors.scalarCount + Self.trailerSize)
        data.append(contentsOf: AdapterFile.magic)
        withUnsafeBytes(of: AdapterFile.version.littleEndian) { data.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt32(json.count).littleEndian) { data.append(contentsOf: $0) }
        data.append(json)
        for values in tensors.values {
            #if _endian(little)
            values.withUnsafeBytes { data.append(contentsOf: $0) }
            #else
            for v in values { withUnsafeBytes(of: v.bitPattern.littleEndian) { data.append(contentsOf: $0) } }
            #endif
        }
        // One pass: the body's digest is the trailer, and the same state fed the trailer gives the file's.
        var hasher = SHA256()
        hasher.update(data)
        var whole = hasher.fork()
        let trailer = hasher.finalize().bytes
        data.append(contentsOf: trailer)
        whole.update(Data(trailer))
        return (data, whole.finalize())
    }

    /// Writes the file atomically and returns its digest.
    @discardableResult
    public func write(to url: URL) throws -> Digest {
        let (data, digest) = encoded()
        do { try AtomicFile.write(data, to: url) } catch { throw AdapterFileError.io("\(error)") }
        return digest
    }

    /// Parses and verifies an adapter file; `name` only labels errors.
    public static func decode(_ data: Data, name: String) throws -> (adapter: AdapterFile, digest: Digest) {
        let verified = try verify(data, name: name)
        return (try decode(verified), verified.digest)
    }

    /// Reads and verifies the adapter file at `url`.
    public static func read(from url: URL) throws -> (adapter: AdapterFile, digest: Digest) {
        try decode(try readBytes(from: url), name: url.lastPathComponent)
    }
}
