import AdaptCore
import Registry
import Steps

/// `adapt registry prune` and the registry part of `adapt prune-history`.
extension RegistryService {
    /// Deletes the adapter files of `lineage` but those of the newest `keep` versions, the active one and its chain
    /// of parents, and every adapter a run still in the job history reads again when replayed (the eval step's
    /// incumbent, the adapter active before a promote step). Rows stay; `dryRun` changes nothing.
    public static func prune(_ registry: AdapterRegistry, lineage: ShortIdentifier, keep: Int, dryRun: Bool) throws
        -> AdapterRegistry.PruneReport {
        // Outside the prune's transaction: the first prune creates its table, which SQLite does in a transaction of
        // its own. A run recorded in between names the active version as its incumbent, which is kept anyway.
        let needed = try RecordedRun.blobsReadOnReplay(in: registry.connection)
        return try registry.prune(lineage: lineage, keep: keep, needed: needed, dryRun: dryRun)
    }

    /// `prune` over every lineage, as `prune-history --keep-versions N` runs it.
    public static func pruneEveryLineage(_ registry: AdapterRegistry, keep: Int, dryRun: Bool) throws
        -> [(lineage: ShortIdentifier, report: AdapterRegistry.PruneReport)] {
        try registry.lineages().map { ($0, try prune(registry, lineage: $0, keep: keep, dryRun: dryRun)) }
    }

    /// Ids of the versions whose adapter file was pruned (listed as such; `registry verify` does not call them missing).
    public static func prunedIDs(_ registry: AdapterRegistry) throws -> Set<Int64> {
        try registry.prunedIDs()
    }
}
