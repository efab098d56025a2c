import AdaptCore
import Foundation
import Pipelines
import ReplayBuffer
import Steps
import Storage

/// What the `data` commands do with the replay buffer: import, list, count, erase (with every copy and the
/// adapters trained on it), set a lineage's policy, release a quarantined source.
public struct DataService: Sendable {
    let store: ReplayStore
    /// Where erasure reaches beyond the buffer: the registry's versions and the blobs.
    let place: Place

    /// The database the buffer lives in, with the blobs kept beside it.
    enum Place: Sendable {
        /// The state directory's SQLite database and blob files.
        case state(Database, StateDirectory)
        /// A PostgreSQL database, its blobs in its `blobs` table.
        case postgres(PostgresConnection, PostgresBlobStore)
    }

    /// The replay buffer of `database`, the state directory's (read-only for the listings).
    public init(database: Database, state: StateDirectory) throws {
        place = .state(database, state)
        store = try ReplayStore(database: database)
    }

    /// The replay buffer of a PostgreSQL database (`postgres://…`), its tables created on first use.
    public init(postgres connectionString: String) throws {
        let connection = try PostgresConnection(connectionString)
        place = .postgres(connection, try PostgresBlobStore(connection: connection))
        store = try ReplayStore(database: connection)
    }

    /// The pairs the default pipeline's gate asks for (`eval.min_pairs`); a lineage's `min_held_out` may raise it.
    public static var gateMinimum: Int { EvalParameters().minPairs }

    public func importJSONL(_ data: Data, lineage: String, options: ImportOptions) throws -> ImportReport {
        try store.importJSONL(data, lineage: lineage, options: options)
    }

    /// The report of an import refused for its bad lines, made without opening a state (`ReplayStore.refusedImport`).
    public static func refusedImport(_ data: Data, lineage: String, options: ImportOptions) -> ImportReport? {
        ReplayStore.refusedImport(data, lineage: lineage, options: options)
    }

    public func examples(lineage: String?, split: Split?) throws -> [Example] {
        try store.examples(lineage: lineage, split: split)
    }

    public func stats(lineage: String?) throws -> [LineageStats] {
        try store.stats(lineage: lineage, gateMinimum: Self.gateMinimum)
    }

    /// What `data forget` erases: every example of `source` (in `lineage`, whose name is checked, when given), or
    /// the examples `ids` name. Every id is resolved before anything is erased: one that matches nothing, or
    /// several examples, stops the command with nothing forgotten.
    public func forgetRequest(ids: [String], source: String?, lineage: String?) throws -> ForgetRequest {
        if let source {
            if let lineage { _ = try store.policy(lineage: lineage) }  // validates the name
            return .source(source, lineage: lineage)
        }
        return .ids(try ids.map { try store.exampleID(matching: $0) })
    }

    /// Erases what `request` names with every copy of it (`DataErasure`), retiring the adapter versions trained
    /// on it when asked; a full disk is `noSpaceToErase`, which says how to make room.
    public func forget(_ request: ForgetRequest, retireAdapters: Bool) throws -> DataErasure.Report {
        do {
            switch place {
            case let .state(database, state):
                return try DataErasure.forget(request, retireAdapters: retireAdapters, database: database,
                                              blobs: state.blobs, state: state)
            case let .postgres(connection, blobs):
                return try DataErasure.forget(request, retireAdapters: retireAdapters, database: connection, blobs: blobs)
            }
        } catch let error as StorageError {
            guard case let .noSpace(path, _) = error else { throw error }
            throw ReplayError.noSpaceToErase(path: path)
        }
    }

    /// What an erasure left in the database's files for later, in a sentence; nil when it purged everything.
    public func leftover(of report: DataErasure.Report) -> String? {
        switch place {
        case .state:
            return report.erasure.walTruncated ? nil
                : "the write-ahead log is held by another reader; it is truncated at its next checkpoint"
        case .postgres:
            return report.erasure.tablesRewritten ? nil
                : "another session held a snapshot (or the tables' locks) while the erased rows' tables were rewritten, so "
                    + "their old files may still hold the text; the next erasure or expiry rewrites them again"
        }
    }

    public func policy(lineage: String) throws -> LineagePolicy {
        try store.policy(lineage: lineage)
    }

    public func setPolicy(lineage: String, _ change: (inout LineagePolicy) -> Void) throws -> LineagePolicy {
        try store.setPolicy(lineage: lineage, change)
    }

    public func release(lineage: String, source: String) throws -> QuarantineRelease {
        try store.release(lineage: lineage, source: source)
    }
}
