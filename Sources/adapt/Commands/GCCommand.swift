import AdaptCore
import CommandLineKit
import Foundation
import Services

/// `adapt gc`: delete the blobs nothing owns (`GarbageCollection`).
enum GCCommand {
    static let all: [Command] = [gc]

    static let gc = Command(
        "gc", summary: "delete blobs no run, adapter version or checkpoint pointer owns",
        discussion: """
            Owners: a run (snapshots and adapters its jobs name), a registry version (retired ones included), the
            newest checkpoint pointer of an unfinished job. Erased blobs are deleted whoever names them. Blobs
            younger than the longest lease in use (at least 120 seconds) are kept: a running step may be about to
            record them. 'adapt prune-history' runs gc after deleting old runs. With --database postgres://… the
            blobs are the database's blob table, collected by the same rules.
            --json prints {deleted_blobs, freed_bytes, kept_blobs, kept_recent, erased_deleted, grace_seconds, dry_run}.
            """,
        options: [dryRun, minimumAge, .json]
    ) { invocation in
        let a = invocation.arguments
        let grace = try a[minimumAge].map { Int64($0 * 1000) }
        let report: GarbageCollection.Report
        if let url = try GlobalOptions.postgresDatabase(invocation) {
            report = try GarbageCollection.collect(postgres: url, dryRun: a[dryRun], graceMilliseconds: grace)
        } else {
            // Nothing to collect in a state that does not exist: refused like the reading commands, never created.
            // A dry run only reads, so it also works on a read-only state.
            _ = try GlobalOptions.existingState(invocation)
            let database = try a[dryRun] ? GlobalOptions.readOnlyDatabase(invocation) : GlobalOptions.database(invocation)
            report = try GarbageCollection.collect(database: database, blobs: try GlobalOptions.stateDirectory(invocation).blobs,
                                                   dryRun: a[dryRun], graceMilliseconds: grace)
        }
        if a[.json] { Console.print(JSON.pretty(report)); return }
        Console.print((report.dryRun ? "would have " : "") + describe(report))
    }

    static func describe(_ r: GarbageCollection.Report) -> String {
        "deleted \(r.deletedBlobs) blob(s) (\(r.freedBytes) bytes\(r.erasedDeleted > 0 ? ", \(r.erasedDeleted) erased" : "")); "
            + "kept \(r.keptBlobs) (\(r.keptRecent) unowned but younger than \(Int(r.graceSeconds)) s)"
    }

    static let dryRun = Flag("dry-run", help: "count what would be deleted, delete nothing")
    static let minimumAge = Option<Double?>(
        "min-age", value: "SECONDS", default: nil,
        help: "keep unowned blobs younger than this (default: the longest lease in use, at least 120)"
    ) { text in
        let age = try OptionParsing.number(text)
        guard (0...(365 * 86_400)).contains(age) else { throw UsageError("must be between 0 and 31536000 seconds, got \(age)") }
        return age
    }
}
