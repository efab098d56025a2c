import AdaptCore
import CommandLineKit
import Foundation
import Services

/// `adapt registry prune`: delete old adapter files of a lineage, keeping every row (`RegistryService.prune`).
enum RegistryPruneCommand {
    static let all: [Command] = [prune]

    static let prune = Command(
        "registry prune", summary: "delete the adapter files of a lineage's old versions (the rows stay)",
        discussion: """
            Keeps the files of the newest N versions, of the active version and every version its chain of \
            parents reaches (what rollback walks back through), and of every adapter a run still in the job \
            history reads when replayed (the eval step's incumbent, the adapter active before a promote step); \
            a file another kept version shares stays too. The rows stay, so history, gate reports and erasure \
            lists still name every version; a pruned version is listed as pruned, 'registry verify' does not call \
            it missing, and it cannot be promoted or rolled back to. 'adapt prune-history --keep-versions N' runs \
            this for every lineage. --json prints {deleted_versions, freed_bytes, kept_versions, dry_run}, the \
            two lists as version names.
            """,
        options: [RegistryCommands.lineage, keep, dryRun, .json]
    ) { invocation in
        let a = invocation.arguments
        let lineage = try a.required(RegistryCommands.lineage)
        let keep = try a.required(RegistryPruneCommand.keep)
        let registry = try a[dryRun] ? RegistryCommands.readingRegistry(invocation) : RegistryCommands.existingRegistry(invocation)
        let report = try RegistryService.prune(registry, lineage: lineage, keep: keep, dryRun: a[dryRun])
        if a[.json] { Console.print(JSON.pretty(ReportJSON(report))); return }
        Console.print(describe(report, lineage: lineage.value))
    }

    struct ReportJSON: Encodable {
        let deleted_versions: [String]
        let freed_bytes: Int64
        let kept_versions: [String]
        let dry_run: Bool

        init(_ report: AdapterRegistry.PruneReport) {
            deleted_versions = report.deletedVersions.map(\.name)
            freed_bytes = report.freedBytes
            kept_versions = report.keptVersions.map(\.name)
            dry_run = report.dryRun
        }
    }

    static func describe(_ report: AdapterRegistry.PruneReport, lineage: String) -> String {
        let deleted = report.deletedVersions.map(\.name)
        return "\(lineage): " + (report.dryRun ? "would delete" : "deleted") + " the files of \(deleted.count) version(s)"
            + (deleted.isEmpty ? "" : " (\(deleted.joined(separator: ", ")))") + ", \(report.freedBytes) bytes; "
            + "kept \(report.keptVersions.count)"
    }

    static let keep = Option<Int?>("keep", value: "N", default: nil,
                                   help: "how many of the newest versions keep their files (the active chain is kept anyway)") { text in
        guard let count = Int(text), (0...1_000_000).contains(count) else {
            throw UsageError("must be a whole number from 0 to 1000000, got \(text)")
        }
        return count
    }
    static let dryRun = Flag("dry-run", help: "say what would be deleted, delete nothing")
}
