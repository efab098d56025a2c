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

    private struct Header: Codable {
        struct Tensor: Codable { var name: String; var shape: [Int] }
        var metadata: AdapterFileMetadata
        var tensors: [Tensor]
    }

    /// The file's bytes and its digest (SHA-256 of all of them).
    public func encoded() -> (data: Data, digest: Digest) {
        let header = Header(metadata: metadata,
                            tensors: zip(tensors.names, tensors.shapes).map { Header.Tensor(name: $0, shape: $1) })
        let json = JSON.canonical(header)
        var writer = BinaryWriter()
        writer.bytes(AdapterFile.magic)
        writer.u32(AdapterFile.version)
        writer.u32(UInt32(json.count))
        writer.bytes(json)
        for values in tensors.values { writer.floats(values) }
        writer.bytes(Data(hexBytes: Digest.sha256(writer.data).hex))
        return (writer.data, Digest.sha256(writer.data))
    }

    /// Writes the file atomically and returns its digest.
    @discardableResult
    public func write(to url: URL) throws -> Digest {
        let (data, digest) = encoded()
        do { try AtomicFile.write(data, to: url) } catch { throw TrainingError.io("\(error)") }
        return digest
    }

    /// Parses and verifies an adapter file; `name` only labels errors.
    public static func decode(_ data: Data, name: String) throws -> (adapter: AdapterFile, digest: Digest) {
        let minimum = 16 + 32
        guard data.count >= minimum else { throw TrainingError.truncated(file: name, expected: minimum, actual: data.count) }
        var reader = BinaryReader(data, file: name)
        guard Array(try reader.bytes(8, field: "magic")) == magic else {
            throw TrainingError.notThisFormat(file: name, expected: "an adapt adapter file")
        }
        let version = try reader.u32("version")
        guard version >= 1, version <= AdapterFile.version else {
            throw TrainingError.unsupportedVersion(file: name, version: version, supported: AdapterFile.version)
        }
        let headerLength = Int(try reader.u32("header length"))
        guard headerLength <= data.count - minimum else {
            throw TrainingError.truncated(file: name, expected: minimum + headerLength, actual: data.count)
        }
        let headerBytes = try reader.bytes(headerLength, field: "header")
        let parsed = try? JSONDecoder().decode(Header.self, from: headerBytes)
        // A cut-short file is reported as truncated when its header still says how long it should be.
        if let parsed {
            // In Double: a corrupt shape must not overflow an Int.
            let declared = parsed.tensors.reduce(0.0) { $0 + $1.shape.reduce(1.0) { $0 * Double(max($1, 0)) } }
            let expected = Double(16 + headerLength + 32) + declared * 4
            if expected > Double(data.count), expected < Double(Int.max / 2) {
                throw TrainingError.truncated(file: name, expected: Int(expected), actual: data.count)
            }
        }
        let body = data.prefix(data.count - 32)
        let stored = data.suffix(32).map { String(format: "%02x", $0) }.joined()
        let actual = Digest.sha256(Data(body))
        guard actual.hex == stored else { throw TrainingError.digestMismatch(file: name, expected: stored, actual: actual.hex) }

        guard let header = parsed else {
            throw TrainingError.malformed(file: name, field: "header", reason: "is not the expected JSON")
        }
        var total = 0
        var seen = Set<String>()
        for tensor in header.tensors {
            guard !tensor.shape.isEmpty, tensor.shape.count <= 4, tensor.shape.allSatisfy({ $0 > 0 && $0 < 1 << 24 }) else {
                throw TrainingError.malformed(file: name, field: "tensor \(tensor.name)", reason: "has an impossible shape \(tensor.shape)")
            }
            guard seen.insert(tensor.name).inserted else {
                throw TrainingError.malformed(file: name, field: "tensor \(tensor.name)", reason: "appears twice")
            }
            total += tensor.shape.reduce(1, *)
        }
        let expected = 16 + headerLength + total * 4 + 32
        guard expected == data.count else {
            throw TrainingError.malformed(file: name, field: "tensors", reason: "leave \(data.count - expected) unexplained bytes")
        }
        var values: [[Float]] = []
        for tensor in header.tensors {
            values.append(try reader.floats(tensor.shape.reduce(1, *), field: "tensor \(tensor.name)"))
        }
        let tensors = NamedTensors(names: header.tensors.map(\.name), shapes: header.tensors.map(\.shape), values: values)
        return (AdapterFile(metadata: header.metadata, tensors: tensors), Digest.sha256(data))
    }

    /// Reads and verifies the adapter file at `url`.
    public static func read(from url: URL) throws -> (adapter: AdapterFile, digest: Digest) {
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw TrainingError.io("cannot read adapter \(url.lastPathComponent); check the path and its permissions")
        }
        return try decode(data, name: url.lastPathComponent)
    }
}
