import AdaptCore
import AdapterExchange
import Foundation
import Registry
import ReplayBuffer
import Storage

/// `adapt data forget` across the modules that hold copies of a user's text or were trained on it: the
/// replay buffer's rows and snapshot blobs, and the registry's adapter versions trained on those snapshots.
///
/// One transaction erases the rows, marks every snapshot blob that held one of them as erased and (when asked)
/// retires the adapter versions trained on such a snapshot, moving an active one off; the blob files are
/// deleted and the write-ahead log truncated right after it commits.
public enum DataErasure {
    public struct Report: Sendable {
        public var erasure: ErasureReport
        /// Versions trained on a snapshot that held a forgotten example (through the run's sample snapshot,
        /// recorded as the version's `metadata.dataset`), whether retired now or not.
        public var trainedOn: [AdapterVersion]
        /// What retiring them did (nil when not asked).
        public var retirement: AdapterRegistry.Retirement?
        /// Scratch directories of killed replays removed (each held a copy of a replay buffer).
        public var removedReplayScratch: Int = 0
        /// What became of the replay scratch directories kept with `adapt replay --scratch` (`KeptReplayScratch`):
        /// removed when they held a copy of an erased snapshot, named when they are gone or no longer ours.
        public var keptReplayScratch: [KeptReplayScratch.Outcome] = []
        /// The active exports of the lineages whose pointer the retirement moved, rewritten after the commit (empty
        /// on PostgreSQL, where each host's exports are repaired when its `adapt work` starts).
        public var activeExports: [ActiveExportSync.Result] = []
    }

    /// `state`, when given, is also swept of the scratch directories killed replays left behind: they copied
    /// the replay buffer and nothing records which examples they hold. A replay running now keeps its own
    /// until it ends, then removes it. Scratch kept with `--scratch` is removed when it holds a copy of an erased
    /// snapshot; and the active exports of the lineages whose pointer moved are written from the committed
    /// pointer (each export names the GGUF in models/ its adapter was trained on).
    ///
    /// `database` is the state's SQLite file or a PostgreSQL database, with the blobs kept beside it (the state's
    /// files, or the database's `blobs` table). After the commit the deleted text is purged from the database's
    /// files (`ReplayStore.purgeDeletedText`: the WAL truncated on SQLite, the tables rewritten on PostgreSQL,
    /// the blob tables too when erased blobs were deleted from them).
    public static func forget(_ request: ForgetRequest, retireAdapters: Bool, database: any SQLConnection,
                              blobs: any BlobStorage, state: StateDirectory? = nil,
                              clock: any Clock = SystemClock()) throws -> Report {
        let store = try ReplayStore(database: database, clock: clock)
        let registry = try AdapterRegistry(connection: database, blobs: blobs, clock: clock)
        var report = try ReplayStore.securely(database) {
            try database.transaction {
                let ids = try store.exampleIDs(for: request)
                let trainedOn = try registry.versions(trainedOn: try store.blobs(holding: ids))
                let erasure = try store.eraseRows(ids: ids, because: .forget)
                let retirement = retireAdapters
                    ? try registry.retire(trainedOn, reason: "trained on erased examples", actor: ShortIdentifier("forget")!)
                    : nil
                return Report(erasure: erasure, trainedOn: trainedOn, retirement: retirement)
            }
        }
        report.erasure.freedBytes = try store.sweepErasedBlobs(blobs)
        if let state {
            report.removedReplayScratch = ReplayScratch.removeStale(in: state).count
            report.keptReplayScratch = KeptReplayScratch.erase(in: state, database: database)
            let moved = Set((report.retirement?.moves ?? []).map(\.lineage.value)).sorted().compactMap { ShortIdentifier($0) }
            report.activeExports = moved.map {
                ActiveExportSync.follow(lineage: $0, registry: registry, model: state.defaultModel, state: state)
            }
        }
        if report.erasure.examples > 0 || report.retirement != nil {
            let purged = store.purgeDeletedText()
            switch database.dialect {
            case .sqlite:
                report.erasure.walTruncated = purged
            case .postgres:
                report.erasure.tablesRewritten = purged
            }
        }
        return report
    }
}
