import AdaptCore
import Foundation
import Storage

/// `adapt registry prune`: deleting old adapter files while keeping every row.
///
/// History rows, gate reports and erasure lists name versions, so a version's row stays; only its file goes, and
/// the version is marked pruned (`registry_pruned`). A pruned version is listed as such, is not "missing" to
/// `registry verify`, and cannot be made active again (`RegistryError.versionPruned`); its cached scores go with its file.
extension AdapterRegistry {
    /// What a prune deleted (or, in a dry run, would delete) and what it kept.
    public struct PruneReport: Sendable, Equatable {
        /// The versions whose file went, oldest first.
        public var deletedVersions: [AdapterVersion] = []
        /// Bytes of the files deleted (a file shared by a kept version is never deleted, so never counted).
        public var freedBytes: Int64 = 0
        /// The versions whose file stays (already pruned ones are in neither list).
        public var keptVersions: [AdapterVersion] = []
        public var dryRun = false
    }

    /// Ids of the versions whose file was pruned.
    public func prunedIDs() throws -> Set<Int64> {
        guard try RegistryPruneSchema.exists(connection) else { return [] }
        return Set(try connection.query("SELECT version_id FROM registry_pruned").compactMap { $0.int64("version_id") })
    }

    /// Deletes the adapter files of `lineage`'s versions except the newest `keep`, the active version and every
    /// version its chain of `parent` and `trained_from` links reaches, and the versions whose file
    /// is one of `needed` (what a recorded run reads again when replayed: the caller knows the job table). A file
    /// two versions share goes only when both are pruned. With `dryRun` nothing changes.
    ///
    /// The marks and the deletions are one transaction, the blob store's lock held inside the database's write
    /// lock as `adapt gc` takes them, so no step stores or reads the file between the decision and the deletion.
    public func prune(lineage: ShortIdentifier, keep: Int, needed: Set<Digest>, dryRun: Bool) throws -> PruneReport {
        precondition(keep >= 0, "keep counts versions")
        if !dryRun { try RegistryPruneSchema.migrate(connection) }
        return try connection.transaction {
            try lockLineage(lineage)
            let versions = try self.versions(lineage: lineage)
            guard !versions.isEmpty else { throw RegistryError.unknownLineage(lineage.value) }
            let pruned = try prunedIDs()
            let protected = try protectedIDs(versions, keep: keep, lineage: lineage)
            var report = PruneReport(dryRun: dryRun)
            var doomed: [AdapterVersion] = []
            for version in versions where !pruned.contains(version.id) {
                if protected.contains(version.id) || needed.contains(version.adapterDigest) {
                    report.keptVersions.append(version)
                } else {
                    doomed.append(version)
                }
            }
            // Another lineage's or a kept version's use of the same bytes keeps the file (and so the version).
            let stillUsed = try digestsOfUnprunedVersions(excluding: Set(doomed.map(\.id)).union(pruned))
            report.keptVersions += doomed.filter { stillUsed.contains($0.adapterDigest) }
            doomed.removeAll { stillUsed.contains($0.adapterDigest) }
            report.keptVersions.sort { $0.number < $1.number }
            report.deletedVersions = doomed
            var files: [Digest: Int64] = [:]
            for version in doomed { files[version.adapterDigest] = try blobs.storedSize(version.adapterDigest) ?? 0 }
            report.freedBytes = files.values.reduce(0, +)
            guard !dryRun, !doomed.isEmpty else { return report }
            let now = clock.nowMilliseconds()
            for version in doomed {
                try connection.run("INSERT INTO registry_pruned (version_id, pruned_at) VALUES (?, ?)", version.id, now)
            }
            // Their cached scores can never be read again (a pruned version is never an incumbent or a candidate
            // again): without this the cache would grow by a night's held-out and canary rows forever.
            for digest in files.keys.sorted(by: { $0.hex < $1.hex }) {
                try connection.run("DELETE FROM score_cache WHERE adapter = ?", ScoreCache.Weights.adapter(digest).key)
            }
            let delete = { for digest in files.keys.sorted(by: { $0.hex < $1.hex }) { try blobs.remove(digest) } }
            if let store = blobs as? BlobStore { try store.withLock(exclusive: true, delete) } else { try delete() }
            return report
        }
    }

    /// The adapter files only pruned versions name (none that is not pruned shares them), over `connection`
    /// (SQLite or PostgreSQL). `adapt gc` owns none of them, even where an old run's train step names one: the
    /// prune deleted it, and a file that reappears there (a put of the same bytes) is collected again.
    public static func digestsOnlyPrunedVersionsHold(in connection: any SQLConnection) throws -> Set<Digest> {
        guard try RegistryPruneSchema.exists(connection) else { return [] }
        let rows = try connection.query("""
            SELECT v.adapter_digest FROM registry_versions v JOIN registry_pruned p ON p.version_id = v.id
            WHERE NOT EXISTS (SELECT 1 FROM registry_versions o WHERE o.adapter_digest = v.adapter_digest
                              AND NOT EXISTS (SELECT 1 FROM registry_pruned q WHERE q.version_id = o.id))
            """)
        return Set(rows.compactMap { $0.string("adapter_digest").flatMap(Digest.init(hex:)) })
    }

    /// The newest `keep` versions, and the active one with every version its `parent` and `trained_from` links
    /// reach (what rollback walks back through, and the weights its training started from).
    private func protectedIDs(_ versions: [AdapterVersion], keep: Int, lineage: ShortIdentifier) throws -> Set<Int64> {
        var protected = Set(versions.sorted { $0.number > $1.number }.prefix(keep).map(\.id))
        let byID = Dictionary(uniqueKeysWithValues: versions.map { ($0.id, $0) })
        var waiting = try active(lineage: lineage).map { [$0.id] } ?? []
        var walked = Set<Int64>()
        while let id = waiting.popLast() {
            guard walked.insert(id).inserted else { continue }
            protected.insert(id)
            waiting += [byID[id]?.parentID, byID[id]?.trainedFromID].compactMap { $0 }
        }
        return protected
    }

    /// The adapter digests of every version, of any lineage, not in `excluded`.
    private func digestsOfUnprunedVersions(excluding excluded: Set<Int64>) throws -> Set<Digest> {
        Set(try connection.query("SELECT id, adapter_digest FROM registry_versions").compactMap { row in
            guard let id = row.int64("id"), !excluded.contains(id) else { return nil }
            return row.string("adapter_digest").flatMap(Digest.init(hex:))
        })
    }
}
