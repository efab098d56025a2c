import AdaptCore
import Foundation
import JobQueue
import Pipelines
import ReplayBuffer
import Storage
import Training

/// A recorded run in one file that replays on a machine with no state directory (issue 24): the run's
/// manifest (with the resolved pipeline and every step's digests), each succeeded step's recorded input and
/// output, the input blobs those steps read from outside the run (buffer snapshot, incumbent and active
/// adapters) and the base model's name and SHA-256, never the model.
///
/// File: the 8 bytes `ADAPTRB1`, then one zstd frame holding the canonical JSON of this value. zstd through
/// Training's wrapper rather than a tar: a bundle is written and read whole, and one JSON document keeps every
/// field typed and every blob next to the digest it must hash to. The frame records its size, so a truncated
/// file fails to decompress and is named as such.
public struct RunBundle: Sendable, Equatable, Codable {
    public static let magic = Data("ADAPTRB1".utf8)
    public static let formatVersion = 1
    /// The most a bundle's document may decompress to. A night of the default model makes about 60 KB; two rank-32
    /// adapters of a 1.7B model, in base64, make about 140 MB. Past this (or past zstd's plausible ratio for the
    /// file's size) the frame is refused before it is decoded, so a small hostile file cannot take gigabytes.
    public static let largestDocument = 256 << 20
    /// The largest file such a document makes: zstd never adds more than 1/128 to what it cannot shrink. A larger
    /// file is refused before it is read.
    public static let largestFile = magic.count + largestDocument + largestDocument / 128 + (1 << 16)

    /// Refuses a file of `bytes` (by its size on disk) that no bundle is, before its bytes are read.
    public static func checkFileSize(_ bytes: Int, path: String) throws {
        guard bytes <= largestFile else { throw RunBundleError.fileTooLarge(path: path, bytes: bytes, limit: largestFile) }
    }

    public struct BaseModel: Sendable, Equatable, Codable {
        /// The file name the run used (no directory).
        public let name: String
        public let digest: Digest
    }

    public let version: Int
    /// Whether the exporter allowed the lineage's user text into the bundle (`--include-user-data`).
    public let includeUserData: Bool
    public let runID: String
    public let runName: String
    public let baseModel: BaseModel
    public let manifest: JSONValue
    public let steps: [RecordedRun.Step]
    /// Base64 of each carried blob, by the SHA-256 (hex) the run recorded for it.
    public let blobs: [String: String]

    enum CodingKeys: String, CodingKey {
        case version, manifest, steps, blobs
        case includeUserData = "include_user_data", runID = "run_id", runName = "run_name", baseModel = "base_model"
    }

    /// The bundle of `runID` in `queue`, whose database `connection` is and whose blobs `store` holds (the state
    /// directory's, or PostgreSQL's `blobs` table). A run whose buffer snapshot holds examples is refused unless
    /// `includeUserData`: the snapshot is the lineage's (scrubbed) text.
    public static func export(_ runID: RunID, queue: any JobEngine, connection: any SQLConnection, blobs store: any BlobStorage,
                              includeUserData: Bool) throws -> RunBundle {
        let run = try queue.run(runID)
        guard let name = run.manifest["base_model"]?["name"]?.stringValue,
              let digest = run.manifest["base_model"]?["digest"]?.stringValue.flatMap(Digest.init(hex:)) else {
            throw StepError.notAPipelineRun(run: runID.description, field: "base_model")
        }
        let recorded = try RecordedRun.load(runID, queue: queue, connection: connection, blobs: store)
        guard !recorded.steps.isEmpty else {
            throw StepError.replayNotPossible(run: runID.description, reason: "none of its steps has succeeded yet")
        }
        var carried: [String: String] = [:]
        for step in recorded.steps {
            for (field, blob) in try RecordedRun.inputBlobs(of: step) {
                let data: Data
                do { data = try store.get(blob) } catch { throw RunBundleError.blobMissing(step: step.name, field: field, digest: blob) }
                if step.kind == StepKind.prune.rawValue, !includeUserData {
                    let dump = try LineageDump.decode(data, context: "buffer snapshot \(blob.short)")
                    if !dump.examples.isEmpty {
                        throw RunBundleError.holdsUserData(run: runID.description, lineage: dump.lineage, examples: dump.examples.count)
                    }
                }
                carried[blob.hex] = data.base64EncodedString()
            }
        }
        return RunBundle(version: formatVersion, includeUserData: includeUserData, runID: runID.description, runName: run.name,
                         baseModel: BaseModel(name: URL(fileURLWithPath: name).lastPathComponent, digest: digest),
                         manifest: run.manifest, steps: recorded.steps, blobs: carried)
    }

    /// The file's bytes.
    public func encoded() throws -> Data {
        Self.magic + (try Zstd.compress(JSON.canonical(self), level: 19))
    }

    /// Reads a bundle file's bytes; `path` only names it in errors.
    public static func decode(_ data: Data, path: String) throws -> RunBundle {
        guard data.count >= magic.count, data.prefix(magic.count) == magic else { throw RunBundleError.notABundle(path: path) }
        let document: Data
        do {
            document = try Zstd.decompress(data.dropFirst(magic.count), limit: largestDocument)
        } catch let .pastLimit(limit, declared) {
            throw RunBundleError.tooLarge(path: path, compressedBytes: data.count - magic.count, limit: limit, declared: declared)
        } catch {
            throw RunBundleError.damaged(path: path, reason: "its compressed document does not decompress")
        }
        let version = (try? JSON.decode(JSONValue.self, from: document, context: "run bundle"))?["version"]?.intValue
        guard let version else { throw RunBundleError.damaged(path: path, reason: "its document is not a bundle's JSON") }
        guard version == formatVersion else { throw RunBundleError.unsupportedVersion(found: version, supported: formatVersion) }
        let bundle: RunBundle
        do {
            bundle = try JSON.decode(RunBundle.self, from: document, context: "run bundle")
        } catch {
            throw RunBundleError.damaged(path: path, reason: "a field of its document is missing or malformed")
        }
        try bundle.checkNames(path: path)
        return bundle
    }

    /// Refuses a bundle whose names could be taken for something else: the base model's name is looked up in a
    /// models directory, so it must be one plain file name (a '../../etc/passwd' would have replay hash any
    /// readable file and print its digest); step names and lineages are the pipeline's names; blobs are keyed by
    /// their SHA-256 in lowercase hex. The names themselves are not printed: they are the file's text.
    func checkNames(path: String) throws {
        if let problem = PlainFileName.problem(baseModel.name) {
            throw RunBundleError.unsafeName(path: path, field: "base_model.name", problem: problem)
        }
        for step in steps {
            guard Lineage.isValid(step.name) else {
                throw RunBundleError.unsafeName(path: path, field: "steps[].name", problem: "is not a step name of letters, digits, '-' or '_'")
            }
            if let lineage = step.input["lineage"], !(lineage.stringValue.map(Lineage.isValid) ?? false) {
                throw RunBundleError.unsafeName(path: path, field: "steps[].input.lineage", problem: "is not a lineage name")
            }
        }
        if let lineage = manifest["lineage"], !(lineage.stringValue.map(Lineage.isValid) ?? false) {
            throw RunBundleError.unsafeName(path: path, field: "manifest.lineage", problem: "is not a lineage name")
        }
        for key in blobs.keys where Digest(hex: key)?.hex != key {
            throw RunBundleError.unsafeName(path: path, field: "blobs", problem: "has a key that is not a SHA-256 in lowercase hex")
        }
    }

    /// The run to replay, after checking that every blob a step reads is carried and hashes to its digest.
    public func recordedRun() throws -> RecordedRun {
        var verified: [Digest: Data] = [:]
        for step in steps {
            for (field, digest) in try RecordedRun.inputBlobs(of: step) {
                guard let text = blobs[digest.hex], let data = Data(base64Encoded: text) else {
                    throw RunBundleError.blobMissing(step: step.name, field: field, digest: digest)
                }
                let actual = Digest.sha256(data)
                guard actual == digest else { throw RunBundleError.blobAltered(step: step.name, field: field, expected: digest, actual: actual) }
                verified[digest] = data
            }
        }
        let blobs = verified
        return RecordedRun(runID: runID, manifest: manifest, steps: steps) { digest in
            guard let data = blobs[digest] else { throw CoreError.blobMissing(digest) }
            return data
        }
    }

    /// Checks that `model` is the file the run was recorded with (by SHA-256), then replays the run in the
    /// empty directory `scratch`.
    public func replay(model: URL, scratch: StateDirectory, clock: any Clock = SystemClock(), comparison: ReplayComparison = .bits,
                       log: @escaping @Sendable (String) -> Void = { _ in }) throws -> RunReplay.Report {
        let run = try recordedRun()
        guard FileManager.default.fileExists(atPath: model.path) else { throw RunBundleError.modelMissing(path: model.path) }
        let actual = try Digest.sha256(fileAt: model)
        guard actual == baseModel.digest else {
            throw RunBundleError.modelDigestDiffers(path: model.path, expected: baseModel.digest, actual: actual)
        }
        return try RunReplay.replay(run, model: model, scratch: scratch, clock: clock, deviceRoot: URL(fileURLWithPath: "/"),
                                    comparison: comparison, log: log)
    }
}
