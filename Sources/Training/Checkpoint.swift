import AdaptCore
import Adapters
import Foundation
import Model

/// A training checkpoint: the configuration and digests a run must match, and the whole `TrainingState`.
///
/// File format (all integers little-endian), version 1:
///
///     offset size  field
///          0    8  magic "ADAPTCKP"
///          8    4  format version (1)
///         12    4  reserved, 0
///         16    8  length of the compressed payload in bytes
///         24    8  length of the payload once decompressed
///         32   32  SHA-256 of the compressed payload
///         64    …  the payload, one zstd frame
///
/// The payload is a sequence of sections, each a 4-byte tag, a u64 length and the bytes, in this order:
/// `META` (canonical JSON: configuration, base-model and dataset digests, step, data cursor, dropout counter,
/// token count, evaluations, BLAS threads, the weights parent's digest when the run started from one), `LOSS` (the loss history as float64), `PARM`, `MOM1`, `MOM2`
/// (parameters and AdamW moments as named float32 tensors) and, when held-out evaluation has run, `BEST`
/// (the best weights). Loading checks every one of these, field by field, before a run may use it.
public struct Checkpoint: Sendable, Equatable {
    public static let magic: [UInt8] = Array("ADAPTCKP".utf8)
    public static let version: UInt32 = 1
    static let headerSize = 64

    public var configuration: TrainingConfiguration
    public var baseModelDigest: Digest
    public var datasetDigest: Digest
    public var state: TrainingState
    /// What the state's bits were computed with (OpenBLAS version and core type, threads, our kernels): a
    /// worker resuming on another machine compares it with its own. Nil in checkpoints written before it was
    /// recorded, and in ones not written by a trainer.
    public var arithmetic: BLASArithmetic? = nil
    /// The digest of the adapter the run started from (`Trainer.weightsParent`); nil for a run from a fresh
    /// initialisation, and in every checkpoint written before warm starts existed (they all were).
    public var weightsParent: Digest? = nil

    /// How the base model's frozen matrices were kept while the state was computed. A checkpoint that records
    /// none was written before the storage was recorded, when training kept the base in f32 unless asked otherwise.
    public var baseWeights: BaseWeightStorage {
        arithmetic?.baseWeights.flatMap(BaseWeightStorage.init(rawValue:)) ?? .f32
    }

    public init(configuration: TrainingConfiguration, baseModelDigest: Digest, datasetDigest: Digest, state: TrainingState) {
        self.configuration = configuration
        self.baseModelDigest = baseModelDigest
        self.datasetDigest = datasetDigest
        self.state = state
    }

    /// `step-00000040.ckpt`: zero-padded so names sort by step.
    public static func fileName(step: Int) -> String {
        let digits = String(step)
        return "step-" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits + ".ckpt"
    }

    private struct Meta: Codable {
        var configuration: TrainingConfiguration
        var baseModelDigest: Digest
        var datasetDigest: Digest
        var blasThreads: Int
        var step: Int
        var cursor: DataCursor
        var microStep: UInt64
        var tokens: Int
        var evaluations: [Evaluation]
        var bestEvaluation: Evaluation?
        var staleEvaluations: Int
        var stoppedEarly: Bool
        var arithmetic: BLASArithmetic?
        /// Left out when nil, so a run from zero writes the bytes it always did.
        var weightsParent: Digest?
    }

    /// The file's bytes: header, then the zstd-compressed payload.
    public func encoded() throws -> Data {
        let meta = Meta(configuration: configuration, baseModelDigest: baseModelDigest, datasetDigest: datasetDigest,
                        blasThreads: configuration.threads, step: state.step, cursor: state.cursor,
                        microStep: state.microStep, tokens: state.tokens, evaluations: state.evaluations,
                        bestEvaluation: state.bestEvaluation, staleEvaluations: state.staleEvaluations,
                        stoppedEarly: state.stoppedEarly, arithmetic: arithmetic, weightsParent: weightsParent)
        var payload = BinaryWriter()
        func section(_ tag: StaticString, _ body: (inout BinaryWriter) -> Void) {
            var inner = BinaryWriter()
            body(&inner)
            payload.ascii(tag)
            payload.u64(UInt64(inner.data.count))
            payload.bytes(inner.data)
        }
        section("META") { $0.bytes(JSON.canonical(meta)) }
        section("LOSS") { $0.doubles(state.losses) }
        section("PARM") { $0.tensors(state.parameters) }
        section("MOM1") { $0.tensors(state.optimizer.firstMoment) }
        section("MOM2") { $0.tensors(state.optimizer.secondMoment) }
        if let best = state.best { section("BEST") { $0.tensors(best) } }

        let compressed: Data
        do { compressed = try Zstd.compress(payload.data) } catch { throw TrainingError.io("\(error)") }
        var file = BinaryWriter()
        file.bytes(Checkpoint.magic)
        file.u32(Checkpoint.version)
        file.u32(0)
        file.u64(UInt64(compressed.count))
        file.u64(UInt64(payload.data.count))
        var hasher = SHA256()
        hasher.update(compressed)
        file.bytes(Data(hexBytes: hasher.finalize().hex))
        file.bytes(compressed)
        return file.data
    }

    /// Parses and verifies a checkpoint file; `name` only labels errors.
    ///
    /// Detects a wrong magic, a newer version, truncation, any flipped byte (SHA-256 over the compressed
    /// payload), and any field that contradicts another (loss history longer than the step count, moments
    /// shaped unlike the parameters, …).
    public static func decode(_ data: Data, name: String) throws -> Checkpoint {
        var header = BinaryReader(data, file: name)
        guard data.count >= headerSize else { throw TrainingError.truncated(file: name, expected: headerSize, actual: data.count) }
        guard Array(try header.bytes(8, field: "magic")) == magic else {
            throw TrainingError.notThisFormat(file: name, expected: "an adapt training checkpoint")
        }
        let version = try header.u32("version")
        guard version >= 1, version <= Checkpoint.version else {
            throw TrainingError.unsupportedVersion(file: name, version: version, supported: Checkpoint.version)
        }
        _ = try header.u32("reserved")
        let compressedLength = try header.u64("payload length")
        let payloadLength = try header.u64("decompressed length")
        let storedDigest = try header.bytes(32, field: "digest")
        guard compressedLength <= UInt64(Int.max - headerSize), Int(compressedLength) + headerSize == data.count else {
            if compressedLength <= UInt64(Int.max - headerSize), Int(compressedLength) + headerSize > data.count {
                throw TrainingError.truncated(file: name, expected: Int(compressedLength) + headerSize, actual: data.count)
            }
            throw TrainingError.malformed(file: name, field: "payload length", reason: "says \(compressedLength) bytes but \(data.count - headerSize) follow the header")
        }
        let compressed = data.subdata(in: (data.startIndex + headerSize)..<data.endIndex)
        let actual = Digest.sha256(compressed)
        let expected = storedDigest.map { String(format: "%02x", $0) }.joined()
        guard actual.hex == expected else {
            throw TrainingError.digestMismatch(file: name, expected: expected, actual: actual.hex)
        }
        guard payloadLength <= 1 << 34 else {
            throw TrainingError.malformed(file: name, field: "decompressed length", reason: "is \(payloadLength) bytes")
        }
        // Tensors and moments shrink little under zstd: a length far past the plausible ratio is a bomb, refused
        // before anything is decoded.
        guard payloadLength <= UInt64(Zstd.largestPlausibleSize(compressedBytes: compressed.count)) else {
            throw TrainingError.malformed(file: name, field: "decompressed length",
                                          reason: "is \(payloadLength) bytes, more than \(compressed.count) compressed bytes of a checkpoint hold")
        }
        let payload: Data
        do { payload = try Zstd.decompress(compressed, limit: Int(payloadLength)) } catch {
            throw TrainingError.malformed(file: name, field: "payload", reason: "does not decompress (\(error))")
        }
        guard payload.count == Int(payloadLength) else {
            throw TrainingError.malformed(file: name, field: "payload", reason: "decompresses to \(payload.count) bytes, header says \(payloadLength)")
        }
        return try decodePayload(payload, name: name)
    }

    private static func decodePayload(_ payload: Data, name: String) throws -> Checkpoint {
        var reader = BinaryReader(payload, file: name)
        func section(_ tag: String) throws -> BinaryReader {
            let found = String(decoding: try reader.bytes(4, field: "section tag"), as: UTF8.self)
            guard found == tag else { throw TrainingError.malformed(file: name, field: "section \(tag)", reason: "is missing (found \(found.debugDescription))") }
            let length = try reader.u64("\(tag) length")
            guard length <= UInt64(reader.remaining) else {
                throw TrainingError.malformed(file: name, field: "section \(tag)", reason: "runs past the end of the payload")
            }
            return BinaryReader(try reader.bytes(Int(length), field: tag), file: name)
        }
        func malformed(_ field: String, _ reason: String) -> TrainingError { .malformed(file: name, field: field, reason: reason) }

        var metaSection = try section("META")
        let meta: Meta
        do { meta = try JSON.decode(Meta.self, from: try metaSection.bytes(metaSection.remaining, field: "META"), context: "META") } catch {
            throw malformed("META", "is not the expected JSON (\(error))")
        }
        var lossSection = try section("LOSS")
        guard lossSection.remaining % 8 == 0 else { throw malformed("LOSS", "is not a whole number of float64 values") }
        let losses = try lossSection.doubles(lossSection.remaining / 8, field: "LOSS")
        var parmSection = try section("PARM")
        let parameters = try parmSection.tensors(field: "PARM")
        var mom1Section = try section("MOM1")
        let first = try mom1Section.tensors(field: "MOM1")
        var mom2Section = try section("MOM2")
        let second = try mom2Section.tensors(field: "MOM2")
        var best: NamedTensors?
        if reader.remaining > 0 {
            var bestSection = try section("BEST")
            best = try bestSection.tensors(field: "BEST")
        }
        for (tag, r) in [("PARM", parmSection), ("MOM1", mom1Section), ("MOM2", mom2Section)] where r.remaining != 0 {
            throw malformed(tag, "has \(r.remaining) bytes after its tensors")
        }
        guard reader.remaining == 0 else { throw malformed("payload", "has \(reader.remaining) unknown trailing bytes") }

        // Field-by-field consistency: every count must agree with every other.
        guard meta.step >= 0, meta.step <= meta.configuration.steps else {
            throw malformed("step", "is \(meta.step) in a run of \(meta.configuration.steps) steps")
        }
        guard losses.count == meta.step else { throw malformed("LOSS", "holds \(losses.count) losses for \(meta.step) steps") }
        guard meta.blasThreads == meta.configuration.threads else {
            throw malformed("blasThreads", "is \(meta.blasThreads) but the configuration says \(meta.configuration.threads)")
        }
        guard first.hasLayout(of: parameters) else { throw malformed("MOM1", "is shaped unlike the parameters") }
        guard second.hasLayout(of: parameters) else { throw malformed("MOM2", "is shaped unlike the parameters") }
        if let best, !best.hasLayout(of: parameters) { throw malformed("BEST", "is shaped unlike the parameters") }
        guard (best == nil) == (meta.bestEvaluation == nil) else {
            throw malformed("BEST", "and bestEvaluation disagree on whether there was an evaluation")
        }
        guard meta.cursor.epoch >= 0, meta.cursor.index >= 0 else { throw malformed("cursor", "is negative") }
        let expectedMicroSteps = UInt64(meta.step) * UInt64(meta.configuration.gradientAccumulation)
        guard meta.microStep == expectedMicroSteps else {
            throw malformed("microStep", "is \(meta.microStep), expected \(expectedMicroSteps) after \(meta.step) steps")
        }
        guard meta.tokens >= 0, meta.staleEvaluations >= 0 else { throw malformed("tokens", "is negative") }
        // The cursor and the token count grow with the sequences taken, which the step count bounds: an epoch
        // takes at least one sequence and a sequence at most maxLength tokens. A value past those bounds
        // would overflow when training continues (the next epoch, the next step's tokens), so it is refused.
        let config = meta.configuration
        let (perStep, perStepOverflow) = config.batchSize.multipliedReportingOverflow(by: config.gradientAccumulation)
        let (sequences, sequencesOverflow) = perStep.multipliedReportingOverflow(by: meta.step)
        guard !perStepOverflow, !sequencesOverflow, config.batchSize > 0, config.gradientAccumulation > 0, config.maxLength > 0 else {
            throw malformed("configuration", "has batch size \(config.batchSize) and gradient accumulation \(config.gradientAccumulation), which no run uses")
        }
        guard meta.cursor.epoch <= sequences else {
            throw malformed("cursor", "is at epoch \(meta.cursor.epoch) after only \(sequences) sequences")
        }
        let (tokenBound, tokenOverflow) = sequences.multipliedReportingOverflow(by: config.maxLength)
        guard !tokenOverflow, meta.tokens <= tokenBound else {
            throw malformed("tokens", "is \(meta.tokens), more than \(sequences) sequences of at most \(config.maxLength) tokens hold")
        }
        // Step 0 is the starting weights, measured only when the configuration asks for it.
        let firstEvaluated = meta.configuration.earlyStopping?.evaluatesAtStart == true ? 0 : 1
        guard meta.evaluations.allSatisfy({ $0.step >= firstEvaluated && $0.step <= meta.step }) else {
            throw malformed("evaluations", "name steps outside \(firstEvaluated)…\(meta.step)")
        }

        let state = TrainingState(parameters: parameters,
                                  optimizer: AdamWState(step: meta.step, firstMoment: first, secondMoment: second),
                                  cursor: meta.cursor, microStep: meta.microStep, losses: losses, tokens: meta.tokens,
                                  evaluations: meta.evaluations, best: best, bestEvaluation: meta.bestEvaluation,
                                  staleEvaluations: meta.staleEvaluations, stoppedEarly: meta.stoppedEarly)
        var checkpoint = Checkpoint(configuration: meta.configuration, baseModelDigest: meta.baseModelDigest,
                                    datasetDigest: meta.datasetDigest, state: state)
        checkpoint.arithmetic = meta.arithmetic
        checkpoint.weightsParent = meta.weightsParent
        return checkpoint
    }

    /// Refuses a checkpoint made for another configuration, base model, base-weight storage, weights parent, dataset or parameter layout, naming
    /// the first field that differs and the way out.
    /// `baseWeights`: the storage the resuming run keeps the base in (nil: not checked, a source without a base model).
    public func check(configuration current: TrainingConfiguration, baseModelDigest currentBase: Digest,
                      datasetDigest currentData: Digest, layout: NamedTensors, datasetCount: Int, name: String,
                      baseWeights currentStorage: BaseWeightStorage? = nil, weightsParent currentParent: Digest? = nil) throws {
        if let difference = current.firstDifference(from: configuration) {
            throw TrainingError.checkpointMismatch(file: name, field: difference.field, stored: difference.stored,
                                                   current: difference.current, remedy: difference.remedy)
        }
        guard baseModelDigest == currentBase else {
            throw TrainingError.checkpointMismatch(file: name, field: "base model", stored: baseModelDigest.short,
                                                   current: currentBase.short, remedy: "pass the same --model or start fresh")
        }
        if let currentStorage, currentStorage != baseWeights {
            throw TrainingError.checkpointMismatch(file: name, field: "base weights", stored: baseWeights.rawValue,
                                                   current: currentStorage.rawValue,
                                                   remedy: "pass --base-weights \(baseWeights.rawValue) to resume it, or start fresh")
        }
        guard weightsParent == currentParent else {
            throw TrainingError.checkpointMismatch(file: name, field: "weights parent", stored: weightsParent?.short ?? "none (from zero)",
                                                   current: currentParent?.short ?? "none (from zero)",
                                                   remedy: weightsParent.map {
                                                       "start from the adapter of digest \($0.short) (--init-adapter) to resume it, or start fresh"
                                                   } ?? "resume it without --init-adapter, or start fresh")
        }
        guard datasetDigest == currentData else {
            throw TrainingError.checkpointMismatch(file: name, field: "dataset", stored: datasetDigest.short,
                                                   current: currentData.short, remedy: "pass the same --data or start fresh")
        }
        guard state.parameters.hasLayout(of: layout) else {
            let stored = "\(state.parameters.count) tensors (\(state.parameters.scalarCount) values)"
            let now = "\(layout.count) tensors (\(layout.scalarCount) values)"
            throw TrainingError.checkpointMismatch(file: name, field: "parameter layout", stored: stored, current: now,
                                                   remedy: "pass the same --model, --rank and --targets or start fresh")
        }
        guard state.cursor.index < datasetCount else {
            throw TrainingError.malformed(file: name, field: "cursor", reason: "points at example \(state.cursor.index) of \(datasetCount)")
        }
    }
}

extension Data {
    /// Bytes from lowercase hexadecimal (digests only; the input is always valid).
    init(hexBytes hex: String) {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        self.init(bytes)
    }
}
