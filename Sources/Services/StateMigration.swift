import AdaptCore
import Foundation
import JobQueue
import Registry
import ReplayBuffer
import Storage
#if canImport(Glibc)
import Glibc
#endif

/// `adapt migrate`: copies a whole state between a state directory (SQLite and blob files) and a PostgreSQL
/// database (tables and `PostgresBlobStore`), in either direction, and proves the copy by digests.
///
/// The target must hold no adapt data. Its tables are written in one transaction, with the database's rules
/// (triggers) switched off inside that transaction only: they guard the engine's transitions, and a copy
/// inserts finished jobs and their events as they are. Before the commit every table's digest
/// (`TableDigest`) is computed on both sides and compared; any difference rolls the copy back. A directory
/// target is built beside its final place and renamed into it at the end, so an interrupted copy leaves no
/// state behind either way.
public enum StateMigration {
    /// One side of a migration, as the user named it.
    public enum Endpoint: Sendable, Equatable, CustomStringConvertible {
        case directory(URL)
        case postgres(String)

        /// `postgres://…` or `postgresql://…` names a database; anything else a state directory.
        public init(_ text: String) {
            if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
                self = .postgres(text)
            } else {
                self = .directory(URL(fileURLWithPath: text).standardizedFileURL)
            }
        }

        /// The path, or the URL without its password.
        public var description: String {
            switch self {
            case let .directory(url): return url.path
            case let .postgres(text): return PostgresConnection.redacted(text)
            }
        }
    }

    /// One table on both sides. Fields are set once, so what `--json` prints is what was compared.
    public struct TableReport: Sendable, Encodable {
        public let table: String
        public let sourceRows: Int
        public let targetRows: Int
        public let sourceDigest: String
        public let targetDigest: String
        public let matched: Bool

        init(table: String, source: TableDigest, target: TableDigest) {
            self.table = table
            sourceRows = source.rows
            targetRows = target.rows
            sourceDigest = source.digest.hex
            targetDigest = target.digest.hex
            matched = source.rows == target.rows && source.digest == target.digest
        }

        enum CodingKeys: String, CodingKey {
            case table, sourceRows = "source_rows", targetRows = "target_rows"
            case sourceDigest = "source_digest", targetDigest = "target_digest", matched
        }
    }

    /// A component's tables; its digests hash its tables' digests in order.
    public struct ComponentReport: Sendable, Encodable {
        public let component: String
        public let rows: Int
        public let sourceDigest: String
        public let targetDigest: String
        public let matched: Bool
        public let tables: [TableReport]

        init(component: String, tables: [TableReport]) {
            self.component = component
            self.tables = tables
            rows = tables.reduce(0) { $0 + $1.sourceRows }
            sourceDigest = Digest.sha256(Data(tables.map(\.sourceDigest).joined(separator: "\n").utf8)).hex
            targetDigest = Digest.sha256(Data(tables.map(\.targetDigest).joined(separator: "\n").utf8)).hex
            matched = tables.allSatisfy(\.matched)
        }

        enum CodingKeys: String, CodingKey {
            case component, rows, sourceDigest = "source_digest", targetDigest = "target_digest", matched, tables
        }
    }

    public struct Report: Sendable, Encodable {
        public let from: String
        public let to: String
        public let components: [ComponentReport]
        public let blobs: BlobCopy.Report
        public let matched: Bool

        init(from: String, to: String, components: [ComponentReport], blobs: BlobCopy.Report) {
            self.from = from
            self.to = to
            self.components = components
            self.blobs = blobs
            matched = components.allSatisfy(\.matched) && blobs.matched
        }
    }

    /// Copies the state at `from` into `to`; one must be a directory and the other a PostgreSQL URL.
    public static func run(from: Endpoint, to: Endpoint) throws -> Report {
        switch (from, to) {
        case let (.directory(source), .postgres(target)):
            return try directoryToPostgres(source, target)
        case let (.postgres(source), .directory(target)):
            return try postgresToDirectory(source, target)
        default:
            throw MigrationError.sameKindOfEndpoint(from: from.description, to: to.description)
        }
    }

    // MARK: The two directions

    private static func directoryToPostgres(_ source: URL, _ targetURL: String) throws -> Report {
        let state = StateDirectory(root: source)
        guard FileManager.default.fileExists(atPath: state.database.path) else {
            throw MigrationError.noSourceState(path: source.path)
        }
        let sourceDatabase = try Database(readingAt: state.database.path)
        try MigrationTables.requireCurrent(sourceDatabase, schemas: MigrationTables.sqliteSchemas, name: source.path)
        try MigrationTables.requireKnown(sourceDatabase, side: source.path)
        let target = try PostgresConnection(targetURL)
        let display = Endpoint.postgres(targetURL).description
        // One read transaction: a worker committing meanwhile cannot make the tables disagree with each other.
        try sourceDatabase.execute("BEGIN")
        defer { try? sourceDatabase.execute("COMMIT") }
        return try target.transaction {
            for schema in MigrationTables.postgresSchemas { try target.migrate(schema) }
            try MigrationTables.requireKnown(target, side: display)
            try MigrationTables.requireEmpty(target, name: display)
            let components = try MigrationTables.copy(from: sourceDatabase, to: target)
            let store = try PostgresBlobStore(connection: target)
            let blobs = try BlobCopy.copy(state.blobs.all(), read: state.blobs.get, to: store) {
                try target.query("SELECT digest FROM blobs ORDER BY digest", arguments: []).compactMap { $0.digest("digest") }
            }
            // The copied jobs' notify trigger was off: wake the idle workers of every kind with work waiting (NOTIFY
            // is delivered at the commit).
            try target.run("""
                SELECT pg_notify(?, kind) FROM (SELECT DISTINCT kind FROM jobs WHERE state IN ('ready','failed')) waiting
                """, PostgresJobSchema.channel)
            return Report(from: source.path, to: display, components: components, blobs: blobs)
        }
    }

    private static func postgresToDirectory(_ sourceURL: String, _ target: URL) throws -> Report {
        let display = Endpoint.postgres(sourceURL).description
        try requireEmptyDirectory(target)
        let source = try PostgresConnection(sourceURL)
        try MigrationTables.requireCurrent(source, schemas: MigrationTables.postgresSchemas, name: display)
        guard try source.schemaVersion(of: PostgresJobSchema.schema.component) > 0 else {
            throw MigrationError.noSourceState(path: display)
        }
        try MigrationTables.requireKnown(source, side: display)
        // Opened before the read transaction: on a database without blobs nothing is created, and on one with
        // them the store's migration has nothing to do.
        let sourceBlobs = try source.schemaVersion(of: PostgresBlobStore.schema.component) == 0
            ? nil : try PostgresBlobStore(connection: source)

        let parent = target.deletingLastPathComponent()
        try PrivateFiles.createDirectory(parent)
        // Held until this returns: a second migrate into the same target would otherwise remove this one's
        // half-built directory below as if a killed migrate had left it.
        let lock = try TargetLock(beside: target)
        defer { lock.release() }
        try requireEmptyDirectory(target)
        let prefix = ".\(target.lastPathComponent).migrating-"
        // A migrate killed before its cleanup left its half-built state here, user text included: it is no one's now.
        for stale in (try? FileManager.default.contentsOfDirectory(atPath: parent.path)) ?? [] where stale.hasPrefix(prefix) {
            try FileManager.default.removeItem(at: parent.appendingPathComponent(stale))
        }
        let building = StateDirectory(root: parent.appendingPathComponent(prefix + UUID().uuidString))
        try building.create()
        defer { try? FileManager.default.removeItem(at: building.root) }

        let report: Report = try source.transaction {
            // One snapshot of the source for every table and blob, whatever commits meanwhile.
            try source.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            let components: [ComponentReport] = try {
                let database = try Database(path: building.database.path)
                for schema in MigrationTables.sqliteSchemas { try database.migrate(schema) }
                return try database.transaction { try MigrationTables.copy(from: source, to: database) }
            }()
            let digests = try sourceBlobs == nil ? [] : source.query("SELECT digest FROM blobs ORDER BY digest", arguments: [])
                .compactMap { $0.digest("digest") }
            let blobs = try BlobCopy.copy(digests, read: { digest in
                guard let store = sourceBlobs else { throw CoreError.blobMissing(digest) }
                return try store.get(digest)
            }, to: building.blobs) { building.blobs.all() }
            return Report(from: display, to: target.path, components: components, blobs: blobs)
        }
        try moveIntoPlace(building.root, target)
        return report
    }

    /// A directory target is new or empty: what it holds would otherwise mix with the copy.
    private static func requireEmptyDirectory(_ target: URL) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: target.path, isDirectory: &isDirectory) else { return }
        let entries = isDirectory.boolValue ? try FileManager.default.contentsOfDirectory(atPath: target.path).sorted() : [target.lastPathComponent]
        if !entries.isEmpty {
            throw MigrationError.targetNotEmpty(target: target.path, holds: Array(entries.prefix(5)) + (entries.count > 5 ? ["…"] : []))
        }
    }

    /// Renames the finished state onto `target` in one step (`rename` replaces an empty directory), so a
    /// reader sees either nothing or the whole copy.
    private static func moveIntoPlace(_ building: URL, _ target: URL) throws {
        guard rename(building.path, target.path) == 0 else {
            let reason = String(cString: strerror(errno))
            throw CoreError.fileUnwritable(path: target.path, reason: "cannot move the copied state into place: \(reason)")
        }
    }
}
