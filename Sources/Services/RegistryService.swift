import AdaptCore
import AdapterExchange
import Adapters
import Foundation
import Registry
import ReplayBuffer
import Storage

/// `adapt registry …` beyond parsing and printing: what a listing shows of each version, registering a file or
/// an import, moving the active pointer together with the active export, and exporting.
///
/// Not named `Registry`: that is the module this service calls, and the name would hide it.
public enum RegistryService {
    /// A registered version with what a listing says about it.
    public struct Entry: Sendable {
        public let version: AdapterVersion
        public let isActive: Bool
        public let parent: AdapterVersion?
        /// The weights parent (`AdapterVersion.trainedFromID`), nil for one trained from zero.
        public var trainedFrom: AdapterVersion? = nil
    }

    /// Every version (of `lineage` when given), oldest first. A parent outside the listing is not named.
    /// The number type of a GGUF-LoRA export (`--outtype`).
    public typealias ExportPrecision = GGUFLoRA.Precision

    /// The registry of `database` (read-only for the commands that only read), storing files in `blobs`.
    public static func open(_ database: Database, blobs: BlobStore) throws -> AdapterRegistry {
        try AdapterRegistry(database: database, blobs: blobs)
    }

    /// The registry of a PostgreSQL database, its adapter files in the database's `blobs` table.
    public static func open(postgres connectionString: String) throws -> AdapterRegistry {
        let connection = try PostgresConnection(connectionString)
        return try AdapterRegistry(connection: connection, blobs: try PostgresBlobStore(connection: connection))
    }

    /// Each version's file checked against its recorded digest.
    public static func verify(_ registry: AdapterRegistry, lineage: ShortIdentifier?) throws -> [AdapterRegistry.Verification] {
        try registry.verify(lineage: lineage)
    }

    public static func list(_ registry: AdapterRegistry, lineage: ShortIdentifier?) throws -> [Entry] {
        let versions = try registry.versions(lineage: lineage)
        let active = try registry.activeIDs()
        let byID = Dictionary(uniqueKeysWithValues: versions.map { ($0.id, $0) })
        return versions.map { Entry(version: $0, isActive: active.contains($0.id), parent: $0.parentID.flatMap { byID[$0] },
                                    trainedFrom: $0.trainedFromID.flatMap { byID[$0] }) }
    }

    public static func show(_ reference: VersionReference, in registry: AdapterRegistry) throws -> Entry {
        let version = try registry.version(reference)
        let active = try registry.active(lineage: version.lineage)
        let parent = try version.parentID.map { try registry.version(id: $0) }
        let trainedFrom = try version.trainedFromID.map { try registry.version(id: $0) }
        return Entry(version: version, isActive: active?.id == version.id, parent: parent, trainedFrom: trainedFrom)
    }

    /// A move of the active pointer with the names of the versions it joined (nil: the base model).
    public struct Move: Sendable {
        public let move: PointerMove
        public let from: String?
        public let to: String?
    }

    /// Every move of the active pointer (of `lineage` when given), oldest first.
    public static func history(_ registry: AdapterRegistry, lineage: ShortIdentifier?) throws -> [Move] {
        let moves = try registry.history(lineage: lineage)
        let names = Dictionary(uniqueKeysWithValues: try registry.versions().map { ($0.id, $0.name) })
        return moves.map { Move(move: $0, from: $0.fromVersionID.flatMap { names[$0] }, to: $0.toVersionID.flatMap { names[$0] }) }
    }

    // MARK: Adding a version

    /// What `registry add` registers.
    public struct Addition: Sendable {
        public enum Source: Sendable {
            /// An adapt adapter file.
            case file(path: String)
            /// An adapter of another tool, checked against `model`, the lineage's base model.
            /// `chatFormat` is the convention the adapter was trained under, required when the model has no template.
            case imported(ExchangeFormat, path: String, model: URL, chatFormat: ChatConvention? = nil)
        }

        public let lineage: ShortIdentifier
        public let source: Source
        public let parent: VersionReference?
        /// Override what an import found (or fill in what a file does not record).
        public let baseModel: Digest?
        public let chatConvention: ShortIdentifier?

        public init(lineage: ShortIdentifier, source: Source, parent: VersionReference?, baseModel: Digest?,
                    chatConvention: ShortIdentifier?) {
            (self.lineage, self.source, self.parent) = (lineage, source, parent)
            (self.baseModel, self.chatConvention) = (baseModel, chatConvention)
        }
    }

    public struct Added: Sendable {
        public let version: AdapterVersion
        /// For an import: the weights digest an export of the same weights reports.
        public let importedWeights: Digest?
    }

    /// Registers the addition as the lineage's next version (not activated, and not promotable before `adapt eval`). `open` gives the registry; it is
    /// called once, before an import (which reads the lineage) or, for a file, once the file was read, so a
    /// missing file creates no state.
    public static func add(_ addition: Addition, registry open: () throws -> AdapterRegistry) throws -> Added {
        var registry: AdapterRegistry?
        var metadata = AdapterMetadata()
        var importedWeights: Digest?
        let data: Data
        switch addition.source {
        case let .imported(format, path, model, chatFormat):
            try AdapterImport.requireReadable(format: format, at: URL(fileURLWithPath: path))
            let opened = try open()
            registry = opened
            let imported = try importedAdapter(format: format, path: path, model: model, chatFormat: chatFormat,
                                               lineage: addition.lineage, registry: opened)
            (data, metadata, importedWeights) = (imported.data, imported.metadata, imported.weights)
        case let .file(path):
            data = try readWhole(path)
            // A text file registered and promoted with --force would fail every later night's eval.
            if !data.isEmpty { try FileFormatCheck.requireAdapter(data, path: path) }
        }
        if let digest = addition.baseModel { metadata.baseModel = digest }
        if let id = addition.chatConvention { metadata.chatConvention = id }
        // No gate verdict comes with an addition: only the engine's own report (`adapt eval`) makes it promotable.
        let version = try (registry ?? open()).register(adapterData: data, lineage: addition.lineage, parent: addition.parent,
                                                        metadata: metadata)
        return Added(version: version, importedWeights: importedWeights)
    }

    /// A regular file's bytes; a missing path, a directory, a FIFO or a device is a clear error, not a hang.
    static func readWhole(_ path: String) throws -> Data {
        guard let data = try AtomicFile.read(URL(fileURLWithPath: path)) else {
            throw CoreError.fileUnreadable(path: path, reason: UnreadablePath.reason(path))
        }
        return data
    }

    // MARK: Moving the active pointer

    /// A move of the active pointer and what became of the active export it rewrote.
    public struct PointerResult: Sendable {
        public let change: AdapterRegistry.PointerChange
        /// What the export says about serving it, one line each.
        public let exportNotes: [String]
        /// Why the export was not rewritten: the move is committed either way, so this is reported, not thrown.
        public let exportFailure: String?
    }

    /// Makes `reference` active, then rewrites the lineage's active export from `model` when the pointer moved.
    /// Unless `force`, refused without the engine's own `better` report for that adapter, on the lineage's
    /// current held-out snapshot, against the version active now (`GateApproval`; `adapt eval` makes one).
    public static func promote(_ reference: VersionReference, force: Bool, registry: AdapterRegistry, model: URL,
                               state: StateDirectory) throws -> PointerResult {
        let replay = try ReplayStore(database: registry.connection)
        // The held-out set is read in the promotion's transaction, so an import cannot grow it in between.
        let change = try registry.connection.transaction {
            let lineage = try registry.version(reference).lineage
            let heldOut = try replay.currentHeldOut(lineage: lineage.value).digest
            return try registry.promote(reference, reason: force ? .force : .gate, heldOut: heldOut)
        }
        return exported(change, registry: registry, model: model, state: state)
    }

    /// Points the lineage back to the version active before the current one, or the base model.
    public static func rollback(lineage: ShortIdentifier, registry: AdapterRegistry, model: URL,
                                state: StateDirectory) throws -> PointerResult {
        exported(try registry.rollback(lineage: lineage), registry: registry, model: model, state: state)
    }

    static func exported(_ change: AdapterRegistry.PointerChange, registry: AdapterRegistry, model: URL,
                         state: StateDirectory) -> PointerResult {
        guard change.move != nil else { return PointerResult(change: change, exportNotes: [], exportFailure: nil) }
        let export = ActiveExportSync.follow(lineage: change.lineage, registry: registry, model: model, state: state)
        return PointerResult(change: change, exportNotes: export.lines, exportFailure: export.failure)
    }
}
