import AdaptCore
import Storage

/// `replay_blobs` and `replay_blob_examples`: every blob that holds user text (a prune step's buffer snapshot,
/// a sample step's training and held-out snapshots), the examples it holds, and whether it was erased.
///
/// Erasure and expiry find here the blobs an example was copied into. An example's rows go with it (ON DELETE
/// CASCADE), so once it is erased not even its id stays behind; the rows of the other examples of an erased
/// blob stay, so a later erasure of one of them still finds the adapter versions trained on that blob.
/// `replay_blobs` keeps a digest, a kind, a date and a reason, never text: what `adapt show` and `adapt replay`
/// need to say "input erased on DATE at the user's request" about a run that read an erased blob.
enum BlobContentsTable {
    static let create = """
        CREATE TABLE replay_blobs (
            blob TEXT PRIMARY KEY CHECK (length(blob) = 64),
            kind TEXT NOT NULL CHECK (kind IN ('buffer_snapshot', 'train_snapshot', 'held_out_snapshot')),
            lineage TEXT NOT NULL,
            recorded_at INTEGER NOT NULL,
            erased_at INTEGER,
            erased_because TEXT CHECK (erased_because IS NULL OR erased_because IN ('forget', 'expiry')),
            CHECK ((erased_at IS NULL) = (erased_because IS NULL))
        ) STRICT;
        CREATE TABLE replay_blob_examples (
            blob TEXT NOT NULL REFERENCES replay_blobs (blob),
            example_id TEXT NOT NULL REFERENCES replay_examples (id) ON DELETE CASCADE,
            PRIMARY KEY (blob, example_id)
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX replay_blob_examples_example ON replay_blob_examples (example_id, blob);

        """

    static let createOnPostgres = """
        CREATE TABLE replay_blobs (
            blob TEXT COLLATE "C" PRIMARY KEY CHECK (length(blob) = 64),
            kind TEXT NOT NULL CHECK (kind IN ('buffer_snapshot', 'train_snapshot', 'held_out_snapshot')),
            lineage TEXT COLLATE "C" NOT NULL,
            recorded_at BIGINT NOT NULL,
            erased_at BIGINT,
            erased_because TEXT CHECK (erased_because IS NULL OR erased_because IN ('forget', 'expiry')),
            CHECK ((erased_at IS NULL) = (erased_because IS NULL))
        );
        CREATE TABLE replay_blob_examples (
            blob TEXT COLLATE "C" NOT NULL REFERENCES replay_blobs (blob),
            example_id TEXT COLLATE "C" NOT NULL REFERENCES replay_examples (id) ON DELETE CASCADE,
            PRIMARY KEY (blob, example_id)
        );
        CREATE INDEX replay_blob_examples_example ON replay_blob_examples (example_id, blob);

        """

    /// Records that `blob` holds `exampleIDs`. A blob recorded before (the same bytes stored again) keeps its
    /// first record; its examples are the same, since the digest names the bytes.
    ///
    /// Throws `ReplayError.erasedWhileSnapshotting` when one of the examples is no longer stored: it was erased
    /// after the snapshot was read (possible only when the record is written in a later transaction than the
    /// read), so the snapshot holds text whose erasure could not find it. The caller deletes the blob and
    /// snapshots again.
    static func record(_ db: any SQLConnection, blob: Digest, kind: BlobKind, lineage: String, exampleIDs: [String], now: Int64) throws {
        for id in exampleIDs where try !ExampleTable.exists(db, id: id) {
            throw ReplayError.erasedWhileSnapshotting(blob: blob.short)
        }
        // The same bytes again after an erasure (the example was imported anew): the blob is live again, or the
        // sweep of erased blobs would delete the file this record now stands for.
        try db.run("""
            INSERT INTO replay_blobs (blob, kind, lineage, recorded_at) VALUES (?, ?, ?, ?)
            ON CONFLICT (blob) DO UPDATE SET erased_at = NULL, erased_because = NULL, recorded_at = excluded.recorded_at
            WHERE replay_blobs.erased_at IS NOT NULL
            """, blob.hex, kind.rawValue, lineage, now)
        for id in exampleIDs {
            try db.run("INSERT INTO replay_blob_examples (blob, example_id) VALUES (?, ?) ON CONFLICT DO NOTHING", blob.hex, id)
        }
    }

    /// Marks every not-yet-erased blob holding one of `exampleIDs` as erased; returns those blobs.
    static func markErased(_ db: any SQLConnection, exampleIDs: [String], because reason: ErasureReason, now: Int64) throws -> [Digest] {
        var found = Set<Digest>()
        for id in exampleIDs {
            let rows = try db.query("""
                SELECT b.blob FROM replay_blob_examples e JOIN replay_blobs b ON b.blob = e.blob
                WHERE e.example_id = ? AND b.erased_at IS NULL
                """, id)
            for row in rows { if let digest = row.string("blob").flatMap(Digest.init(hex:)) { found.insert(digest) } }
        }
        for digest in found {
            try db.run("UPDATE replay_blobs SET erased_at = ?, erased_because = ? WHERE blob = ?", now, reason.rawValue, digest.hex)
        }
        return found.sorted()
    }

    /// Every blob (erased or not) that holds one of `exampleIDs`.
    static func blobs(_ db: any SQLConnection, holding exampleIDs: [String]) throws -> Set<Digest> {
        var found = Set<Digest>()
        for id in exampleIDs {
            for row in try db.query("SELECT blob FROM replay_blob_examples WHERE example_id = ?", id) {
                if let digest = row.string("blob").flatMap(Digest.init(hex:)) { found.insert(digest) }
            }
        }
        return found
    }

    static func erased(_ db: any SQLConnection) throws -> [Digest] {
        try db.query("SELECT blob FROM replay_blobs WHERE erased_at IS NOT NULL ORDER BY blob")
            .compactMap { $0.string("blob").flatMap(Digest.init(hex:)) }
    }

    static func erasure(_ db: any SQLConnection, blob: Digest) throws -> BlobErasure? {
        guard let row = try db.queryOne(
            "SELECT kind, erased_at, erased_because FROM replay_blobs WHERE blob = ? AND erased_at IS NOT NULL", blob.hex),
              let at = row.int64("erased_at"),
              let reason = row.string("erased_because").flatMap(ErasureReason.init(rawValue:)) else { return nil }
        return BlobErasure(blob: blob, kind: row.string("kind").flatMap(BlobKind.init(rawValue:)), at: at, reason: reason)
    }

    /// Forgets the records of blobs that are no longer stored and were never erased (the collector deleted
    /// them): nothing can read them any more. Erased blobs keep their record for `adapt show`.
    static func dropUnstored(_ db: any SQLConnection, stored: Set<Digest>) throws -> Int {
        var dropped = 0
        for row in try db.query("SELECT blob FROM replay_blobs WHERE erased_at IS NULL") {
            guard let text = row.string("blob"), let digest = Digest(hex: text), !stored.contains(digest) else { continue }
            try db.run("DELETE FROM replay_blob_examples WHERE blob = ?", text)
            dropped += try db.run("DELETE FROM replay_blobs WHERE blob = ?", text)
        }
        return dropped
    }
}

/// What a recorded blob is.
public enum BlobKind: String, Sendable, Codable {
    case bufferSnapshot = "buffer_snapshot"
    case trainSnapshot = "train_snapshot"
    case heldOutSnapshot = "held_out_snapshot"
}

/// Why text was erased.
public enum ErasureReason: String, Sendable, Codable {
    /// `adapt data forget`: the user asked.
    case forget
    /// The TTL passed (the prune step).
    case expiry

    /// "at the user's request" / "expired".
    public func sentence(at milliseconds: Int64) -> String {
        let day = String(Timestamp.iso8601(milliseconds).prefix(10))
        switch self {
        case .forget: return "input erased on \(day) at the user's request"
        case .expiry: return "input expired on \(day) (TTL)"
        }
    }
}

/// One erased blob: which, when and why.
public struct BlobErasure: Sendable, Equatable {
    public let blob: Digest
    public let kind: BlobKind?
    public let at: Int64
    public let reason: ErasureReason
}
