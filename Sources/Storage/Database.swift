import CSQLite
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// SQLITE_TRANSIENT tells SQLite to copy bound text and blobs before the call returns.
private let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// Evaluated once, before the first connection opens.
private let disableMemoryStatistics: Int32 = adapt_sqlite3_disable_memory_statistics()

/// The one connection wrapper everything uses; the only Swift file that calls libsqlite3.
///
/// `@unchecked Sendable`: the handle and the statement cache are only touched with `lock` held. The lock is
/// recursive so a transaction body can run statements on the same connection.
public final class Database: SQLConnection, @unchecked Sendable {
    public var dialect: SQLDialect { .sqlite }
    public let path: String
    public let durability: Durability
    /// Opened with `SQLITE_OPEN_READONLY` (`init(readingAt:)`): nothing is written, migrations included.
    public let isReadOnly: Bool
    private let handle: OpaquePointer
    private let lock = NSRecursiveLock()
    private var statements: [String: OpaquePointer] = [:]
    private var transactionDepth = 0
    /// In-memory databases standing in for components a read-only database does not have (see `Migrator`).
    private var standIns: [Database] = []

    /// Opens (creating if needed) the database at `path` in WAL mode with the given durability.
    /// A file that is not SQLite is refused without being modified.
    public init(path: String, durability: Durability = .full, pageSize: Int = Database.defaultPageSize,
                busyTimeoutMilliseconds: Int32 = 30_000) throws {
        self.path = path
        self.durability = durability
        isReadOnly = false
        Self.makePrivate(path)
        handle = try Self.open(path, flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, displayPath: path)
        // SQLite has just created the file if it was missing (with the umask's mode): make it private before
        // the WAL and shared-memory files are made, which copy its mode.
        Self.makePrivate(path)
        try configure(busyTimeoutMilliseconds: busyTimeoutMilliseconds) {
            try execute("PRAGMA page_size=\(pageSize)")
            try execute("PRAGMA journal_mode=WAL")
            try execute("PRAGMA synchronous=\(durability == .full ? "FULL" : "NORMAL")")
        }
    }

    /// Opens the existing database at `path` for reading only: no file is created or changed, and the open
    /// works in a read-only directory or on a read-only file system.
    ///
    /// In WAL mode SQLite reads through the `-wal` and `-shm` files beside the database, and a reader creates
    /// them when they are missing. Where there are none and the directory cannot be written (no write
    /// permission for this process, no write bit at all, a read-only mount) nothing can be writing either, so
    /// the file is opened `immutable`: read as it is, without those files or locks. Otherwise the reader
    /// takes part in WAL locking as usual and sees commits made while it is open.
    public init(readingAt path: String, busyTimeoutMilliseconds: Int32 = 30_000) throws {
        self.path = path
        durability = .full
        isReadOnly = true
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { throw StorageError.noDatabase(path: path) }
        let directory = (path as NSString).deletingLastPathComponent
        let hasWAL = FileManager.default.fileExists(atPath: path + "-wal")
        let immutable = !hasWAL && !Self.isWritableDirectory(directory.isEmpty ? "." : directory)
        handle = try Self.open(Self.uri(path, immutable: immutable),
                               flags: SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, displayPath: path)
        try configure(busyTimeoutMilliseconds: busyTimeoutMilliseconds) {}
    }

    /// An in-memory database shared under `name` by the connections of this process that open it.
    private init(sharedMemory name: String) throws {
        path = ":memory:"
        durability = .normal
        isReadOnly = false
        handle = try Self.open("file:\(name)?mode=memory&cache=shared",
                               flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                               displayPath: name)
        try configure(busyTimeoutMilliseconds: 1_000) {}
    }

    private static func open(_ name: String, flags: Int32, displayPath: String) throws -> OpaquePointer {
        _ = disableMemoryStatistics
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(name, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let db { sqlite3_close_v2(db) }
            throw StorageError.cannotOpen(path: displayPath, message: message)
        }
        return db
    }

    /// Reading the schema first detects a non-database file before any pragma could write to it.
    private func configure(busyTimeoutMilliseconds: Int32, writing: () throws -> Void) throws {
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, busyTimeoutMilliseconds)
        do {
            _ = try scalar("SELECT count(*) FROM sqlite_schema")
            try writing()
            try execute("PRAGMA foreign_keys=ON")
        } catch let error as StorageError where error.primaryCode == SQLITE_NOTADB {
            close()
            throw StorageError.notADatabase(path: path)
        } catch let error as StorageError where isReadOnly && error.primaryCode == SQLITE_CANTOPEN {
            close()
            throw StorageError.unreadableWAL(path: path)
        } catch {
            close()
            throw error
        }
    }

    /// Removes group and other bits from the database file and its `-wal` and `-shm` companions. Called before
    /// SQLite opens the file and right after (when SQLite created it, by the umask), before WAL mode makes the
    /// companions: SQLite's unix VFS creates `-wal` and `-shm` with the database file's permissions (os_unix.c,
    /// findCreateFileMode and unixOpenSharedMemory), so they are private too, whatever the umask, and no
    /// process-wide umask change (which would race with other threads creating files) is needed. A newly
    /// created file is empty until then. Nothing is created here, so a read-only open creates nothing.
    private static func makePrivate(_ path: String) {
        guard !path.isEmpty, path != ":memory:", !path.hasPrefix("file:") else { return }
        for suffix in ["", "-wal", "-shm"] {
            var status = stat()
            // lstat: a symlinked database is the link target's owner's business.
            if lstat(path + suffix, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_mode & 0o077 != 0 {
                _ = chmod(path + suffix, status.st_mode & 0o7700)
            }
        }
    }

    /// A directory this process may create files in: write permission, a write bit for someone (root passes
    /// every permission check, but a directory made read-only with `chmod a-w` is meant to stay as it is), and
    /// not on a read-only mount.
    private static func isWritableDirectory(_ path: String) -> Bool {
        var info = stat()
        var fs = statvfs()
        guard access(path, W_OK) == 0, stat(path, &info) == 0, info.st_mode & 0o222 != 0, statvfs(path, &fs) == 0 else { return false }
        return fs.f_flag & UInt(ST_RDONLY) == 0
    }

    /// A read-only `file:` URI for `path` (percent-encoded, so `?`, `#` and `%` in a path stay part of it).
    private static func uri(_ path: String, immutable: Bool) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
        allowed.insert(charactersIn: "/-._~")
        let encoded = absolute.addingPercentEncoding(withAllowedCharacters: allowed) ?? absolute
        return "file://\(encoded)?mode=ro" + (immutable ? "&immutable=1" : "")
    }

    /// Attaches an empty, current copy of `schema`'s tables as `alias`, for a read-only database that never
    /// had them: unqualified table names resolve to the main database first, then to attached ones, so
    /// reads of that component find empty tables instead of failing. The copy lives as long as this connection.
    func attachEmptyStandIn(for schema: Schema) throws {
        let name = "adapt-empty-\(schema.component)-\(UUID().uuidString)"
        let standIn = try Database(sharedMemory: name)
        try standIn.migrate(schema)
        try lock.withLock {
            standIns.append(standIn)
            try execute("ATTACH DATABASE 'file:\(name)?mode=memory&cache=shared' AS \"empty_\(schema.component)\"")
        }
    }

    /// The page size of a new database file (an existing one keeps its own: WAL mode cannot change it).
    ///
    /// A commit appends every page it changed to the WAL, and the rows here are small (a job is about 130
    /// bytes, an event about 60), so a commit changes a few bytes in each of a few pages. With SQLite's
    /// default 4 KB pages a single enqueue wrote about four 4 KB frames; with 1 KB pages it writes about five
    /// 1 KB frames, which made single enqueues and one-at-a-time claim+complete faster at durability normal
    /// (measured side by side: BENCHMARKS.md, code choices). Larger rows (an eval report, an example's text)
    /// spill into overflow pages, which costs reads a few more page lookups and writes nothing extra.
    public static let defaultPageSize = 1024

    deinit { close() }

    private var closed = false
    private func close() {
        lock.withLock {
            guard !closed else { return }
            closed = true
            for statement in statements.values { sqlite3_finalize(statement) }
            statements.removeAll()
            sqlite3_close_v2(handle)
        }
    }

    // MARK: Statements

    /// Runs one or more statements that take no parameters and return nothing of interest.
    public func execute(_ sql: String) throws {
        try lock.withLock {
            let rc = sqlite3_exec(handle, sql, nil, nil, nil)
            guard rc == SQLITE_OK else { throw error(rc, sql: sql) }
        }
    }

    @discardableResult
    public func run(_ sql: String, arguments: [SQLBindable]) throws -> Int {
        try lock.withLock {
            _ = try rows(sql, arguments)
            return Int(sqlite3_changes(handle))
        }
    }

    public func query(_ sql: String, arguments: [SQLBindable]) throws -> [Row] {
        try lock.withLock { try rows(sql, arguments) }
    }

    /// The first row, or nil.
    public func queryOne(_ sql: String, _ arguments: SQLBindable...) throws -> Row? {
        try lock.withLock { try rows(sql, arguments, limit: 1).first }
    }

    /// The first column of the first row.
    public func scalar(_ sql: String, _ arguments: SQLBindable...) throws -> SQLValue {
        try lock.withLock { try rows(sql, arguments, limit: 1).first?.values.first ?? .null }
    }

    public var lastInsertRowID: Int64 { lock.withLock { sqlite3_last_insert_rowid(handle) } }

    /// Changes whenever another connection commits to this database (PRAGMA data_version); polling it is
    /// how idle workers notice new work within milliseconds without re-running their claim query.
    public func dataVersion() throws -> Int64 {
        if case let .integer(v) = try scalar("PRAGMA data_version") { return v }
        return 0
    }

    // MARK: Transactions

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction (taking the write lock up front, so two writers never
    /// deadlock on an upgrade); nested calls become savepoints. Any thrown error rolls back.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try lock.withLock {
            let depth = transactionDepth
            let savepoint = "sp\(depth)"
            // Through the statement cache: `execute` would parse these again on every transaction, a cost a
            // busy worker pays twice per job.
            _ = try rows(depth == 0 ? "BEGIN IMMEDIATE" : "SAVEPOINT \(savepoint)", [])
            transactionDepth += 1
            defer { transactionDepth -= 1 }
            do {
                let result = try body()
                _ = try rows(depth == 0 ? "COMMIT" : "RELEASE \(savepoint)", [])
                return result
            } catch {
                if depth == 0 {
                    try? execute("ROLLBACK")
                } else {
                    try? execute("ROLLBACK TO \(savepoint); RELEASE \(savepoint)")
                }
                throw error
            }
        }
    }

    // MARK: Internals

    private func rows(_ sql: String, _ arguments: [SQLBindable], limit: Int = .max) throws -> [Row] {
        let statement = try prepared(sql)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        let expected = Int(sqlite3_bind_parameter_count(statement))
        precondition(expected == arguments.count, "statement takes \(expected) parameters, \(arguments.count) given: \(sql)")
        for (offset, argument) in arguments.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch argument.sqlValue {
            case .null: rc = sqlite3_bind_null(statement, index)
            case let .integer(v): rc = sqlite3_bind_int64(statement, index, v)
            case let .real(v): rc = sqlite3_bind_double(statement, index, v)
            case let .text(v):
                // withCString lends the string's own UTF-8 where it can; passing `v` directly would copy it.
                rc = v.withCString { sqlite3_bind_text(statement, index, $0, -1, SQLITE_TRANSIENT) }
            case let .blob(v):
                rc = v.withUnsafeBytes { raw in
                    sqlite3_bind_blob(statement, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(raw.count), SQLITE_TRANSIENT)
                }
            }
            guard rc == SQLITE_OK else { throw error(rc, sql: sql) }
        }
        let columnCount = sqlite3_column_count(statement)
        let names = (0..<columnCount).map { String(cString: sqlite3_column_name(statement, $0)) }
        var result: [Row] = []
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw error(rc, sql: sql) }
            if result.count >= limit { continue }
            var values: [SQLValue] = []
            values.reserveCapacity(Int(columnCount))
            for column in 0..<columnCount {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER: values.append(.integer(sqlite3_column_int64(statement, column)))
                case SQLITE_FLOAT: values.append(.real(sqlite3_column_double(statement, column)))
                case SQLITE_TEXT: values.append(.text(String(cString: sqlite3_column_text(statement, column))))
                case SQLITE_BLOB:
                    let count = Int(sqlite3_column_bytes(statement, column))
                    if let bytes = sqlite3_column_blob(statement, column), count > 0 {
                        values.append(.blob(Data(bytes: bytes, count: count)))
                    } else {
                        values.append(.blob(Data()))
                    }
                default: values.append(.null)
                }
            }
            result.append(Row(columns: names, values: values))
        }
        return result
    }

    private func prepared(_ sql: String) throws -> OpaquePointer {
        if let cached = statements[sql] { return cached }
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw error(rc, sql: sql) }
        statements[sql] = statement
        return statement
    }

    /// Why a failed write is a lack of space, or nil. SQLite turns ENOSPC into SQLITE_FULL, but a quota
    /// (EDQUOT) or the file-size limit (EFBIG, RLIMIT_FSIZE) arrive as SQLITE_IOERR_WRITE, and by the time the
    /// error reaches us the rollback has overwritten errno (sqlite3_system_errno reads 0). So the space itself
    /// is checked: the file system's free blocks, and the file-size limit against the database and its WAL.
    private func noSpaceReason(_ code: Int32) -> String? {
        // SQLITE_IOERR_WRITE, _FSYNC, _TRUNCATE, _SHMSIZE (sqlite3.h builds them as macros Swift does not import).
        let writeFailures: Set<Int32> = [3, 4, 6, 19].map { SQLITE_IOERR | ($0 << 8) }.reduce(into: []) { $0.insert($1) }
        guard writeFailures.contains(code) else { return nil }
        let systemError = sqlite3_system_errno(handle)
        if [ENOSPC, EDQUOT, EFBIG].contains(systemError) { return String(cString: strerror(systemError)) }
        var limit = rlimit()
        if getrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max {  // RLIM_INFINITY
            let largest = ["", "-wal", "-shm"].compactMap { suffix -> UInt64? in
                var status = stat()
                return stat(path + suffix, &status) == 0 ? UInt64(status.st_size) : nil
            }.max() ?? 0
            // A write past the limit is refused whole, so the file stops short of it by up to one WAL frame.
            if largest + 2 * 65_536 >= UInt64(limit.rlim_cur) {
                return "the process's file-size limit of \(limit.rlim_cur) bytes is reached"
            }
        }
        var fileSystem = statvfs()
        let directory = (path as NSString).deletingLastPathComponent
        if statvfs(directory.isEmpty ? "." : directory, &fileSystem) == 0,
           UInt64(fileSystem.f_bavail) * UInt64(fileSystem.f_frsize) < 1 << 20 {
            return "the file system is full"
        }
        return nil
    }

    /// Read-only and damaged files get errors that say what to do; everything else carries SQLite's code.
    private func error(_ code: Int32, sql: String?) -> StorageError {
        let message = String(cString: sqlite3_errmsg(handle))
        switch code & 0xFF {
        case SQLITE_READONLY: return .readOnly(path: path, message: message)
        case SQLITE_CORRUPT: return .damaged(path: path, message: message)
        case SQLITE_FULL: return .noSpace(path: path, message: message)
        case SQLITE_IOERR:
            if let reason = noSpaceReason(code) { return .noSpace(path: path, message: reason) }
            return .sqlite(code: code, message: message, sql: sql)
        default: return .sqlite(code: code, message: message, sql: sql)
        }
    }
}
