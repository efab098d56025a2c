import AdaptCore
import Foundation
import JobQueue
import Registry
import ReplayBuffer
import Storage

/// `adapt gc`: deletes the blobs nothing owns.
///
/// Owners: a run (any digest its jobs' inputs and outputs or its manifest name: snapshots, adapters), a
/// registry version (its adapter file, retired versions included: adapter files are never rewritten; a version
/// whose file `registry prune` deleted owns nothing, and neither does a run for that file), and a
/// checkpoint pointer (of every unfinished job: what a resumed train step
/// reads). Score-cache rows name adapters by digest but never read the file, so they own nothing. An erased
/// blob is deleted whoever names it: its text must go (`show` and `replay` say why it is missing).
///
/// A step stores a blob before it records it (the sample step's snapshots commit with its uses, the train
/// step's adapter with its completion, a checkpoint just before its pointer), so an unowned blob may
/// be one a running step is about to record. Such a blob is younger than the step's lease: the record
/// lands within the claim that stored it, or the claim is lost and the next attempt stores the same bytes
/// again, which refreshes the file's access time (`BlobStore.put`). So blobs younger than the longest lease in
/// use (at least two minutes) are kept, and the collector holds the store's lock while it checks and
/// deletes, so no put lands between its look at a file and its removal.
/// Lock order everywhere: the database's write lock before the blob store's lock.
public struct BlobCollector {
    public struct Report: Sendable, Equatable, Encodable {
        public var deletedBlobs = 0
        public var freedBytes: Int64 = 0
        public var keptBlobs = 0
        /// Unowned blobs kept because they are younger than the grace period.
        public var keptRecent = 0
        /// Erased blobs deleted (included in `deletedBlobs`).
        public var erasedDeleted = 0
        public var graceSeconds: Double = 0
        public var dryRun = false

        enum CodingKeys: String, CodingKey {
            case deletedBlobs = "deleted_blobs", freedBytes = "freed_bytes", keptBlobs = "kept_blobs"
            case keptRecent = "kept_recent", erasedDeleted = "erased_deleted", graceSeconds = "grace_seconds"
            case dryRun = "dry_run"
        }
    }

    /// The shortest grace period used when no job records a longer lease (the train and eval workers' default).
    public static let minimumGraceMilliseconds: Int64 = 120_000

    public let database: Database
    public let blobs: BlobStore

    public init(database: Database, blobs: BlobStore) {
        self.database = database
        self.blobs = blobs
    }

    /// The grace period: the longest lease any unfinished job records or holds, at least two minutes.
    public func defaultGraceMilliseconds() throws -> Int64 {
        guard try tableExists("jobs") else { return Self.minimumGraceMilliseconds }
        let recorded = try database.scalar("""
            SELECT max(coalesce(lease_ms, 0), coalesce(lease_expires_at - coalesce(heartbeat_at, updated_at), 0))
            FROM jobs WHERE state IN ('pending', 'ready', 'running', 'failed')
            ORDER BY 1 DESC LIMIT 1
            """).integerValue ?? 0
        return max(Self.minimumGraceMilliseconds, recorded)
    }

    /// Every digest something owns.
    func owned() throws -> Set<Digest> {
        var found = Set<Digest>()
        func collect(_ text: String?) {
            guard let text, let value = try? JSON.decode(JSONValue.self, from: text, context: "a stored document") else { return }
            Self.digests(in: value, into: &found)
        }
        // A state that never had a job (only `data import`) has no job tables; nothing there owns a blob then.
        guard try tableExists("jobs") else {
            return found.union(try registryDigests()).subtracting(try AdapterRegistry.digestsOnlyPrunedVersionsHold(in: database))
        }
        for row in try database.query("SELECT input, output FROM jobs") {
            collect(row.string("input"))
            collect(row.string("output"))
        }
        for row in try database.query("SELECT manifest FROM job_runs") { collect(row.string("manifest")) }
        for pointer in try JobQueue.unfinishedCheckpointPointers(in: database).values { Self.digests(in: pointer, into: &found) }
        // A pruned version's file is owned by nothing, though its night's train step still names it.
        return found.union(try registryDigests()).subtracting(try AdapterRegistry.digestsOnlyPrunedVersionsHold(in: database))
    }

    private func registryDigests() throws -> Set<Digest> {
        guard try tableExists("registry_versions") else { return [] }
        return Set(try database.query("SELECT adapter_digest FROM registry_versions")
            .compactMap { $0.string("adapter_digest").flatMap(Digest.init(hex:)) })
    }

    static func digests(in value: JSONValue, into found: inout Set<Digest>) {
        switch value {
        case let .string(text): if text.utf8.count == 64, let digest = Digest(hex: text) { found.insert(digest) }
        case let .array(items): for item in items { digests(in: item, into: &found) }
        case let .object(fields): for item in fields.values { digests(in: item, into: &found) }
        default: break
        }
    }

    /// A stored blob as the sweep sees it: its size, and when it was last stored (milliseconds since the epoch).
    struct StoredBlob {
        let digest: Digest
        let size: Int64
        let storedMilliseconds: Int64
    }

    /// The collector's rules, whichever store holds the blobs: an erased blob goes whoever owns it, an owned one
    /// stays, an unowned one goes once it is older than `grace`. `delete` is called for each that goes (a dry
    /// run's deletes nothing), and `report` counts them.
    static func sweep(_ stored: [StoredBlob], owned: Set<Digest>, erased: Set<Digest>, grace: Int64, now: Int64,
                      into report: inout Report, delete: (Digest) throws -> Void) throws {
        for blob in stored {
            let isErased = erased.contains(blob.digest)
            if !isErased {
                if owned.contains(blob.digest) { report.keptBlobs += 1; continue }
                if now - blob.storedMilliseconds < grace { report.keptBlobs += 1; report.keptRecent += 1; continue }
            }
            try delete(blob.digest)
            report.deletedBlobs += 1
            report.freedBytes += blob.size
            if isErased { report.erasedDeleted += 1 }
        }
    }

    private func tableExists(_ name: String) throws -> Bool {
        try database.scalar("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?", name).integerValue == 1
    }

    /// Deletes (or with `dryRun` only counts) the unowned blobs older than `graceMilliseconds` (default:
    /// `defaultGraceMilliseconds`), and every erased one. `now` is wall time: file times are.
    public func collect(dryRun: Bool = false, graceMilliseconds: Int64? = nil,
                        now: Int64 = SystemClock().nowMilliseconds()) throws -> Report {
        let grace = try graceMilliseconds ?? defaultGraceMilliseconds()
        var report = Report()
        report.graceSeconds = Double(grace) / 1000
        report.dryRun = dryRun
        // The database's write lock first, then the store's: the sample step stores its snapshots while it
        // holds the write lock, so taking them in the other order could make each wait for the other. Holding
        // the write lock also means no step records a blob while the collector decides.
        try database.transaction {
            let owned = try owned()
            let erased = Set(try ReplayStore.erasedBlobs(in: database))
            // A dry run deletes nothing, so it needs no lock file (and creates none in a read-only state).
            let sweep = {
                let stored = blobs.all().compactMap { digest in
                    blobs.attributes(digest).map { StoredBlob(digest: digest, size: $0.size, storedMilliseconds: $0.storedMilliseconds) }
                }
                try Self.sweep(stored, owned: owned, erased: erased, grace: grace, now: now, into: &report) { digest in
                    if !dryRun { try blobs.remove(digest) }
                }
            }
            if dryRun { try sweep() } else { try blobs.withLock(exclusive: true, sweep) }
        }
        if !dryRun, try tableExists("replay_blobs") {
            try ReplayStore(database: database).dropRecordsOfUnstoredBlobs(stored: Set(blobs.all()))
        }
        return report
    }
}
