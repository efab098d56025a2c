import AdaptCore
import Steps
import Storage

/// `adapt gc`: deletes the blobs nothing owns (Steps' `BlobCollector`, which knows every owner; on PostgreSQL
/// `PostgresBlobCollector`, by the same rules, over the database's blob table).
public enum GarbageCollection {
    public typealias Report = BlobCollector.Report

    /// Collects the unowned blobs of `blobs`; with `dryRun` only counts them. `graceMilliseconds` overrides the
    /// age below which an unowned blob is kept (default: the longest lease in use, at least two minutes).
    public static func collect(database: Database, blobs: BlobStore, dryRun: Bool, graceMilliseconds: Int64?) throws -> Report {
        try BlobCollector(database: database, blobs: blobs).collect(dryRun: dryRun, graceMilliseconds: graceMilliseconds)
    }

    /// Collects the unowned blobs of the PostgreSQL database `connectionString` names, as `collect` does.
    public static func collect(postgres connectionString: String, dryRun: Bool, graceMilliseconds: Int64?) throws -> Report {
        try PostgresBlobCollector(connection: try PostgresConnection(connectionString))
            .collect(dryRun: dryRun, graceMilliseconds: graceMilliseconds)
    }
}
