import AdaptCore
import JobQueue
import ReplayBuffer
import Storage

/// The inputs of a run that were erased (`data forget`) or expired (TTL): what `adapt show` and `adapt replay`
/// say instead of failing on a missing blob.
public struct ErasedInput: Sendable, Equatable, Encodable {
    public let step: String
    /// Where the job's output names the blob (`inputs.buffer_snapshot`, `train_snapshot`).
    public let field: String
    public let blob: String
    /// `forget` or `expiry`.
    public let reason: String
    public let erasedAt: String
    /// "input erased on 2026-12-01 at the user's request".
    public let message: String

    enum CodingKeys: String, CodingKey {
        case step, field, blob, reason, message
        case erasedAt = "erased_at"
    }

    /// The erased inputs among the blobs `job`'s output names.
    public static func of(_ job: JobRecord, in database: any SQLConnection) throws -> [ErasedInput] {
        guard let output = job.output else { return [] }
        let named = digestFields(output)
        let erasures = try ReplayStore.erasures(of: named.map(\.digest), in: database)
        return named.compactMap { field, digest in
            erasures[digest].map {
                ErasedInput(step: job.name, field: field, blob: digest.hex, reason: $0.reason.rawValue,
                            erasedAt: Timestamp.iso8601($0.at), message: $0.reason.sentence(at: $0.at))
            }
        }
    }

    /// Every field of a job output (its `inputs` and its result, not its own `digests`) holding a blob digest.
    static func digestFields(_ output: JSONValue) -> [(field: String, digest: Digest)] {
        guard case let .object(fields) = output else { return [] }
        var found: [(String, Digest)] = []
        for (key, value) in (fields["inputs"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
            if let digest = value.stringValue.flatMap(Digest.init(hex:)) { found.append(("inputs.\(key)", digest)) }
        }
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) where !StepRecord.reservedKeys.contains(key) {
            if let digest = value.stringValue.flatMap(Digest.init(hex:)) { found.append((key, digest)) }
        }
        return found
    }
}

extension StepContext {
    /// A dataset snapshot an earlier step wrote; one that was erased or expired meanwhile (a run that was
    /// still going when its user asked) ends the step with `StepError.inputErased`, which is not retried,
    /// instead of a missing-blob error retried until the attempts run out.
    func snapshot(_ digest: Digest, field: String) throws -> [SnapshotExample] {
        do {
            return try DatasetSnapshot.load(digest, from: environment.blobs)
        } catch CoreError.blobMissing(let missing) {
            guard let erasure = try ReplayStore.erasures(of: [missing], in: environment.database)[missing] else {
                throw CoreError.blobMissing(missing)
            }
            throw StepError.inputErased(run: "this run", step: name, field: field, sentence: erasure.reason.sentence(at: erasure.at))
        }
    }
}
