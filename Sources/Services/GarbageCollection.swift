import AdaptCore
import Steps
import Storage

/// `adapt gc`: deletes the blobs nothing owns (Steps' `BlobCollector`, which knows every owner).
public enum GarbageCollection {
    public typealias Report = BlobCollector.Report

    /// Collects the unowned blobs of `blobs`; with `dryRun` only counts them. `graceMilliseconds` overrides the
    /// age below which an unowned blob is kept (default: the longest lease in use, at least two minutes).
    public static func collect(database: Database, blobs: BlobStore, dryRun: Bool, graceMilliseconds: Int64?) throws -> Report {
        try BlobCollector(database: database, blobs: blobs).collect(dryRun: dryRun, graceMilliseconds: graceMilliseconds)
    }
}
