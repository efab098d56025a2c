import AdaptCore
import Foundation
import Storage

/// Adapter versions per lineage, their content-addressed files, and the active pointer.
///
/// Adapter bytes live in a `BlobStorage` (files in the state directory, or chunks in PostgreSQL) under their
/// SHA-256 and are never rewritten; rows refer to them by digest and every read verifies the digest. The active
/// pointer moves only by `promote`, `rollback` and `retire`, each one transaction that updates the pointer and
/// appends to the history together.
///
/// The SQL is written once for both databases (`SQLConnection`); the few places they differ branch on
/// `connection.dialect`. Every method runs inside `connection.transaction { }`, which becomes a savepoint when
/// the caller already holds a transaction on that connection: a job engine can complete its job and flip the
/// pointer in one commit by building the registry on its own connection (`on(_:)`, or passing `in:`).
public struct AdapterRegistry: Sendable {
    public let connection: any SQLConnection
    public let blobs: any BlobStorage
    public let clock: any Clock

    /// Opens the registry on `connection`, creating or upgrading its tables (each backend has its own list of
    /// migrations, `RegistrySchema`).
    public init(connection: any SQLConnection, blobs: any BlobStorage, clock: any Clock = SystemClock()) throws {
        try RegistrySchema.migrate(connection)
        self.init(unchecked: connection, blobs: blobs, clock: clock)
    }

    /// The registry of a state directory: its SQLite database and its blob files.
    public init(database: Database, blobs: BlobStore, clock: any Clock = SystemClock()) throws {
        try self.init(connection: database, blobs: blobs, clock: clock)
    }

    /// The same registry on another connection to the same database (e.g. the caller's transaction). Blobs kept
    /// in the database move to that connection too, so an adapter registered there commits with its row.
    public func on(_ other: any SQLConnection) -> AdapterRegistry {
        var blobs = self.blobs
        if let stored = blobs as? PostgresBlobStore, let postgres = other as? PostgresConnection { blobs = stored.on(postgres) }
        return AdapterRegistry(unchecked: other, blobs: blobs, clock: clock)
    }

    private init(unchecked connection: any SQLConnection, blobs: any BlobStorage, clock: any Clock) {
        self.connection = connection
        self.blobs = blobs
        self.clock = clock
    }

    /// Holds `lineage`'s registry writers off until the transaction ends. SQLite's write transactions are
    /// serial already (`BEGIN IMMEDIATE`); on PostgreSQL two hosts could otherwise both read the same active
    /// version or the same next number and write over each other's decision.
    func lockLineage(_ lineage: ShortIdentifier) throws {
        guard connection.dialect == .postgres else { return }
        _ = try connection.query("SELECT pg_advisory_xact_lock(\(Self.lineageLockSpace), hashtext(?))", lineage.value)
    }

    /// The first key of the registry's two-key advisory locks ("rg" in ASCII); the job engine's and the
    /// migrations' single-key locks live in a key space of their own.
    private static let lineageLockSpace: Int32 = 0x72_67

    // MARK: Registering

    /// Stores the adapter bytes (content-addressed) and records a new version `v(N+1)` of `lineage`.
    ///
    /// `parent` is the version active at registration; `trainedFrom` the version whose weights training started
    /// from (both of `lineage`). The blob is written before the row, so a crash in between leaves an unreferenced
    /// blob, never a row without its file. Registering the same bytes twice makes two versions that share one file.
    @discardableResult
    public func register(adapterData: Data, lineage: ShortIdentifier, parent: VersionReference? = nil,
                         trainedFrom: VersionReference? = nil,
                         metadata: AdapterMetadata, metrics: VersionMetrics = VersionMetrics()) throws -> AdapterVersion {
        guard !adapterData.isEmpty else { throw RegistryError.emptyAdapter }
        try metrics.gate?.checkConsistency()
        let parentRow = try parent.map { try version(VersionReference(lineage: $0.lineage ?? lineage, number: $0.number)) }
        if let parentRow, parentRow.lineage != lineage {
            throw RegistryError.parentInAnotherLineage(parent: parentRow.reference.description, lineage: lineage.value)
        }
        let weightsParent = try trainedFrom.map { try version(VersionReference(lineage: $0.lineage ?? lineage, number: $0.number)) }
        if let weightsParent, weightsParent.lineage != lineage {
            throw RegistryError.parentInAnotherLineage(parent: weightsParent.reference.description, lineage: lineage.value)
        }
        if let weightsParent, weightsParent.isRetired {
            throw RegistryError.weightsParentRetired(lineage: lineage.value, version: weightsParent.name)
        }
        let digest = try blobs.put(adapterData)
        let now = clock.nowMilliseconds()
        return try connection.transaction {
            try lockLineage(lineage)
            let next = Int(try connection.scalar(
                "SELECT coalesce(max(number), 0) + 1 FROM registry_versions WHERE lineage = ?", lineage.value).integerValue ?? 1)
            guard let row = try connection.queryOne(
                "INSERT INTO registry_versions (lineage, number, parent_id, trained_from_id, adapter_digest, size, metadata, metrics, created_at) "
                    + "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING \(AdapterVersion.columns)",
                lineage.value, next, parentRow?.id, weightsParent?.id, digest, adapterData.count,
                JSON.canonicalString(metadata), JSON.canonicalString(metrics), now) else {
                throw RegistryError.corruptRow(table: "registry_versions", reason: "the new version's row was not returned")
            }
            return try AdapterVersion(row: row)
        }
    }

    /// Replaces the measurements of a version (e.g. the eval step's gate verdict). Metadata and the adapter
    /// file never change.
    public func recordMetrics(_ metrics: VersionMetrics, for reference: VersionReference) throws {
        try metrics.gate?.checkConsistency()
        try connection.transaction {
            let row = try version(reference)
            try connection.run("UPDATE registry_versions SET metrics = ? WHERE id = ?", JSON.canonicalString(metrics), row.id)
        }
    }

    // MARK: Reading

    /// Every version, by lineage then number; only `lineage`'s when given.
    public func versions(lineage: ShortIdentifier? = nil) throws -> [AdapterVersion] {
        let rows = try lineage.map {
            try connection.query("SELECT \(AdapterVersion.columns) FROM registry_versions WHERE lineage = ? ORDER BY number", $0.value)
        } ?? connection.query("SELECT \(AdapterVersion.columns) FROM registry_versions ORDER BY lineage, number")
        return try rows.map(AdapterVersion.init(row:))
    }

    public func lineages() throws -> [ShortIdentifier] {
        try connection.query("SELECT DISTINCT lineage FROM registry_versions ORDER BY lineage")
            .compactMap { $0.string("lineage").flatMap(ShortIdentifier.init) }
    }

    /// Finds a version; a bare `vN` must be unique across lineages.
    public func version(_ reference: VersionReference) throws -> AdapterVersion {
        if let lineage = reference.lineage {
            guard let row = try connection.queryOne(
                "SELECT \(AdapterVersion.columns) FROM registry_versions WHERE lineage = ? AND number = ?",
                lineage.value, reference.number) else {
                if try connection.queryOne("SELECT 1 FROM registry_versions WHERE lineage = ?", lineage.value) == nil {
                    throw RegistryError.unknownLineage(lineage.value)
                }
                throw RegistryError.unknownVersion(lineage: lineage.value, version: reference.name)
            }
            return try AdapterVersion(row: row)
        }
        let rows = try connection.query(
            "SELECT \(AdapterVersion.columns) FROM registry_versions WHERE number = ? ORDER BY lineage", reference.number)
        guard rows.count == 1 else {
            if rows.isEmpty { throw RegistryError.unknownVersion(lineage: RegistryError.anyLineage, version: reference.name) }
            throw RegistryError.ambiguousVersion(version: reference.name, lineages: rows.compactMap { $0.string("lineage") })
        }
        return try AdapterVersion(row: rows[0])
    }

    public func version(id: Int64) throws -> AdapterVersion {
        guard let row = try connection.queryOne("SELECT \(AdapterVersion.columns) FROM registry_versions WHERE id = ?", id) else {
            throw RegistryError.corruptRow(table: "registry_versions", reason: "version id \(id) is referenced but missing")
        }
        return try AdapterVersion(row: row)
    }

    /// The adapter's bytes, verified against its digest.
    public func adapterData(_ version: AdapterVersion) throws -> Data {
        do { return try blobs.get(version.adapterDigest) } catch let error as CoreError {
            throw RegistryError.adapterUnavailable(lineage: version.lineage.value, version: version.name, reason: error.description)
        }
    }

    /// The adapter's bytes as stored, not yet hashed, for a reader that checks them against
    /// `version.adapterDigest` itself in the pass that also checks the file's own trailer (the hot-swap path:
    /// `AdapterFile.verify(_:name:expectedDigest:)`). Hashing a 3.7 MB adapter twice would cost a swap a
    /// second hash (BENCHMARKS.md, adapter hot swap). No byte may be used before that check.
    public func unverifiedAdapterData(_ version: AdapterVersion) throws -> Data {
        do { return try blobs.getUnverified(version.adapterDigest) } catch let error as CoreError {
            throw RegistryError.adapterUnavailable(lineage: version.lineage.value, version: version.name, reason: error.description)
        }
    }

    /// The active version of `lineage`, or nil when it uses the base model.
    public func active(lineage: ShortIdentifier) throws -> AdapterVersion? {
        guard let id = try connection.scalar(
            "SELECT version_id FROM registry_active WHERE lineage = ?", lineage.value).integerValue else { return nil }
        return try version(id: id)
    }

    /// Ids of the active version of every lineage that has one.
    public func activeIDs() throws -> Set<Int64> {
        Set(try connection.query("SELECT version_id FROM registry_active WHERE version_id IS NOT NULL").compactMap { $0.int64("version_id") })
    }

    /// Pointer moves, oldest first.
    public func history(lineage: ShortIdentifier? = nil) throws -> [PointerMove] {
        let sql = "SELECT \(PointerMove.columns) FROM registry_history"
        let rows = try lineage.map { try connection.query(sql + " WHERE lineage = ? ORDER BY id", $0.value) }
            ?? connection.query(sql + " ORDER BY id")
        return try rows.map(PointerMove.init(row:))
    }
}
