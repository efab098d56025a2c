import AdaptCore
import Storage

/// A way to name a version: `v3` (the lineage comes from elsewhere) or `mail/v3`.
public struct VersionReference: Sendable, Equatable, CustomStringConvertible {
    public let lineage: ShortIdentifier?
    public let number: Int

    public init(lineage: ShortIdentifier?, number: Int) {
        self.lineage = lineage
        self.number = number
    }

    public init(parsing text: String) throws {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count <= 2, let last = parts.last, last.hasPrefix("v"),
              let number = Int(last.dropFirst()), number >= 1, String(number) == last.dropFirst() else {
            throw RegistryError.invalidVersionReference
        }
        self.number = number
        lineage = parts.count == 2 ? try ShortIdentifier(validating: parts[0], field: "the lineage of a version") : nil
    }

    public var name: String { "v\(number)" }
    public var description: String { lineage.map { "\($0)/\(name)" } ?? name }
}

/// One registered adapter.
public struct AdapterVersion: Sendable, Equatable {
    /// The row id: global, stable, used for parents and history.
    public let id: Int64
    public let lineage: ShortIdentifier
    /// Counts up from 1 per lineage; shown as `vN`.
    public let number: Int
    /// The version active when this one was registered (the promotion chain).
    public let parentID: Int64?
    /// The version whose LoRA weights this one's training started from (its weights parent); nil when it was
    /// trained from zero, imported, or registered before the field existed.
    public let trainedFromID: Int64?
    public let adapterDigest: Digest
    public let size: Int
    public let metadata: AdapterMetadata
    public let metrics: VersionMetrics
    public let createdAt: Int64
    /// When the version was retired (it can no longer be made active), nil while it is usable.
    public let retiredAt: Int64?
    /// Why, in fixed words (`trained on erased examples`), never user text.
    public let retiredReason: String?

    public var isRetired: Bool { retiredAt != nil }
    public var name: String { "v\(number)" }
    public var reference: VersionReference { VersionReference(lineage: lineage, number: number) }

    static let columns = "id, lineage, number, parent_id, trained_from_id, adapter_digest, size, metadata, metrics, created_at, retired_at, retired_reason"

    init(row: Row) throws {
        func need<T>(_ value: T?, _ column: String) throws -> T {
            guard let value else { throw RegistryError.corruptRow(table: "registry_versions", reason: "column \(column)") }
            return value
        }
        id = try need(row.int64("id"), "id")
        lineage = try need(row.string("lineage").flatMap(ShortIdentifier.init), "lineage")
        number = try need(row.int("number"), "number")
        parentID = row.int64("parent_id")
        trainedFromID = row.int64("trained_from_id")
        adapterDigest = try need(row.digest("adapter_digest"), "adapter_digest")
        size = try need(row.int("size"), "size")
        metadata = try JSON.decode(AdapterMetadata.self, from: try need(row.string("metadata"), "metadata"),
                                   context: "registry_versions.metadata")
        metrics = try JSON.decode(VersionMetrics.self, from: try need(row.string("metrics"), "metrics"),
                                  context: "registry_versions.metrics")
        createdAt = try need(row.int64("created_at"), "created_at")
        retiredAt = row.int64("retired_at")
        retiredReason = row.string("retired_reason")
    }
}

/// Why the active pointer moved.
public enum PointerMoveReason: String, Sendable, Codable {
    /// The gate said `better` (the pipeline's promote step, or a person promoting a gated version).
    case gate
    /// A person promoted without a `better` verdict.
    case force
    case rollback
    /// The active version was retired (trained on erased text) and the pointer moved off it.
    case retire
}

/// One row of `registry_history`.
public struct PointerMove: Sendable, Equatable {
    public let id: Int64
    public let lineage: ShortIdentifier
    /// Version row ids; nil is the base model.
    public let fromVersionID: Int64?
    public let toVersionID: Int64?
    public let reason: PointerMoveReason
    /// What a forced promotion bypassed (fixed words and numbers), nil otherwise.
    public let bypassed: String?
    public let actor: ShortIdentifier
    public let at: Int64

    static let columns = "id, lineage, from_version_id, to_version_id, reason, bypassed, actor, at"

    init(row: Row) throws {
        guard let id = row.int64("id"), let lineage = row.string("lineage").flatMap(ShortIdentifier.init),
              let reason = row.string("reason").flatMap(PointerMoveReason.init(rawValue:)),
              let actor = row.string("actor").flatMap(ShortIdentifier.init), let at = row.int64("at") else {
            throw RegistryError.corruptRow(table: "registry_history", reason: "missing or invalid column")
        }
        self.id = id
        self.lineage = lineage
        fromVersionID = row.int64("from_version_id")
        toVersionID = row.int64("to_version_id")
        self.reason = reason
        bypassed = row.string("bypassed")
        self.actor = actor
        self.at = at
    }
}
