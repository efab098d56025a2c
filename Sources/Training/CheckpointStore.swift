import AdaptCore
import Foundation

/// A saved checkpoint, as listed by a store: its step and a name for messages.
public struct CheckpointReference: Sendable, Equatable {
    public var step: Int
    /// A file name (`step-00000040.ckpt`) or `step-40@<digest prefix>` in a blob store.
    public var name: String

    public init(step: Int, name: String) {
        self.step = step
        self.name = name
    }
}

/// Where a run's checkpoints live: a directory for `adapt train`, the blob store for the train worker.
///
/// A store keeps the newest `keep` checkpoints (two by default: if the newest turns out corrupt there is
/// still one to fall back to) and lists them newest first.
public protocol CheckpointStore: Sendable {
    /// A description of the place, for messages.
    var location: String { get }
    /// Saved checkpoints, newest first.
    func list() throws -> [CheckpointReference]
    /// The bytes of one checkpoint (unverified: `Checkpoint.decode` verifies).
    func read(_ reference: CheckpointReference) throws -> Data
    /// Saves the bytes of the checkpoint at `step` durably, then forgets all but the newest `keep`.
    @discardableResult
    func save(_ data: Data, step: Int) throws -> CheckpointReference
}

/// What loading the newest usable checkpoint found.
public struct LoadedCheckpoint: Sendable {
    public var checkpoint: Checkpoint
    public var reference: CheckpointReference
    /// One sentence per newer checkpoint that was unusable and skipped (corrupt, truncated).
    public var warnings: [String]
}

extension CheckpointStore {
    /// The newest checkpoint that reads and verifies, falling back past corrupt ones with a warning each;
    /// nil when the store holds none. Throws `noUsableCheckpoint` when there are some and none is readable.
    ///
    /// Only damage makes it fall back: a checkpoint that reads fine but was made for another run is the
    /// caller's to refuse (`Checkpoint.check`), since an older one from the same place would be refused too.
    public func loadNewest() throws -> LoadedCheckpoint? {
        let references = try list()
        guard !references.isEmpty else { return nil }
        var warnings: [String] = []
        for reference in references {
            do {
                let checkpoint = try Checkpoint.decode(try read(reference), name: reference.name)
                guard checkpoint.state.step == reference.step else {
                    throw TrainingError.malformed(file: reference.name, field: "step",
                                                  reason: "is \(checkpoint.state.step), the name says \(reference.step)")
                }
                return LoadedCheckpoint(checkpoint: checkpoint, reference: reference, warnings: warnings)
            } catch {
                warnings.append("skipped checkpoint \(reference.name): \(error)")
            }
        }
        throw TrainingError.noUsableCheckpoint(location: location, failures: warnings)
    }
}

/// Checkpoints as files in one directory.
///
/// Layout: `<directory>/step-00000040.ckpt`, `<directory>/step-00000050.ckpt` — one file per checkpoint,
/// named by its step (zero-padded to 8 digits so names sort by step), each written atomically (temp file,
/// fsync, rename, fsync of the directory). Only files matching that pattern are considered; anything else
/// in the directory (a half-written `.step-….tmp` left by a crash) is ignored. After a save, all but the
/// newest `keep` checkpoint files are deleted.
public struct DirectoryCheckpointStore: CheckpointStore {
    public let directory: URL
    public let keep: Int

    public init(directory: URL, keep: Int = 2) {
        precondition(keep >= 1, "keep at least one checkpoint")
        self.directory = directory
        self.keep = keep
    }

    public var location: String { directory.lastPathComponent }

    public func list() throws -> [CheckpointReference] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return [] }
        return names.compactMap(Self.step(inName:)).sorted(by: >).map {
            CheckpointReference(step: $0, name: Checkpoint.fileName(step: $0))
        }
    }

    public func read(_ reference: CheckpointReference) throws -> Data {
        let url = directory.appendingPathComponent(reference.name)
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw TrainingError.io("cannot read checkpoint \(reference.name) in \(location); check its permissions")
        }
        return data
    }

    @discardableResult
    public func save(_ data: Data, step: Int) throws -> CheckpointReference {
        let reference = CheckpointReference(step: step, name: Checkpoint.fileName(step: step))
        do { try AtomicFile.write(data, to: directory.appendingPathComponent(reference.name)) } catch {
            throw TrainingError.io("\(error)")
        }
        for old in try list().dropFirst(keep) {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(old.name))
        }
        return reference
    }

    /// The step of a name of the form `step-<digits>.ckpt`.
    static func step(inName name: String) -> Int? {
        guard name.hasPrefix("step-"), name.hasSuffix(".ckpt") else { return nil }
        let digits = name.dropFirst(5).dropLast(5)
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber) else { return nil }
        return Int(digits)
    }
}

/// One entry of a checkpoint pointer: a checkpoint's step and the digest of its blob.
public struct CheckpointPointerEntry: Sendable, Equatable, Codable {
    public var step: Int
    public var digest: Digest

    public init(step: Int, digest: Digest) {
        self.step = step
        self.digest = digest
    }
}

/// Where a blob-store run records which blobs are its checkpoints, newest first.
///
/// The train worker implements it over its job's row (a write conditioned on the lease's fencing token, so
/// a worker that lost its lease cannot move the pointer); `FileCheckpointPointer` keeps it in a small file.
public protocol CheckpointPointer: Sendable {
    func read() throws -> [CheckpointPointerEntry]
    func write(_ entries: [CheckpointPointerEntry]) throws
}

/// A checkpoint pointer kept as a JSON file, replaced atomically.
public struct FileCheckpointPointer: CheckpointPointer {
    public let url: URL

    public init(url: URL) { self.url = url }

    public func read() throws -> [CheckpointPointerEntry] {
        guard let data = FileManager.default.contents(atPath: url.path) else { return [] }
        do { return try JSON.decode([CheckpointPointerEntry].self, from: data, context: "checkpoint pointer \(url.lastPathComponent)") } catch {
            throw TrainingError.io("\(error); delete it to start fresh")
        }
    }

    public func write(_ entries: [CheckpointPointerEntry]) throws {
        do { try AtomicFile.write(JSON.canonical(entries), to: url) } catch { throw TrainingError.io("\(error)") }
    }
}

/// Checkpoints as content-addressed blobs plus a pointer naming the newest `keep` of them.
///
/// Save order makes a crash at any point harmless: the blob is written (atomically, named by its SHA-256)
/// before the pointer moves, and blobs the pointer no longer names are removed only after it moved. A blob
/// whose bytes no longer hash to its name is reported as corrupt and the previous one is used.
public struct BlobCheckpointStore: CheckpointStore {
    public let blobs: any BlobStorage
    public let pointer: any CheckpointPointer
    public let keep: Int

    public init(blobs: any BlobStorage, pointer: any CheckpointPointer, keep: Int = 2) {
        precondition(keep >= 1, "keep at least one checkpoint")
        self.blobs = blobs
        self.pointer = pointer
        self.keep = keep
    }

    public var location: String { "the blob store" }

    public func list() throws -> [CheckpointReference] {
        try pointer.read().sorted { $0.step > $1.step }.map { CheckpointReference(step: $0.step, name: Self.name($0)) }
    }

    public func read(_ reference: CheckpointReference) throws -> Data {
        guard let entry = try pointer.read().first(where: { Self.name($0) == reference.name }) else {
            throw TrainingError.io("checkpoint \(reference.name) is no longer in the pointer; another worker moved on")
        }
        do { return try blobs.get(entry.digest) } catch { throw TrainingError.io("\(error)") }
    }

    @discardableResult
    public func save(_ data: Data, step: Int) throws -> CheckpointReference {
        let digest: Digest
        do { digest = try blobs.put(data) } catch { throw TrainingError.io("\(error)") }
        let entry = CheckpointPointerEntry(step: step, digest: digest)
        let previous = try pointer.read().filter { $0.step != step }.sorted { $0.step > $1.step }
        let kept = [entry] + previous.prefix(keep - 1)
        try pointer.write(kept)
        for dropped in previous.dropFirst(keep - 1) where !kept.contains(where: { $0.digest == dropped.digest }) {
            try? blobs.remove(dropped.digest)
        }
        return CheckpointReference(step: step, name: Self.name(entry))
    }

    static func name(_ entry: CheckpointPointerEntry) -> String { "step-\(entry.step)@\(entry.digest.short)" }
}
