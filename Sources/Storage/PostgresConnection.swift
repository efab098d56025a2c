import CPostgres
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One connection to a PostgreSQL server; the only Swift file that calls libpq.
///
/// Statements take `$1`, `$2`, … (or `?`) parameters, bound out of line (never spliced into the SQL), and return the
/// same `Row`s and `SQLValue`s as `Database`, so record types read rows of either backend. Results are read in
/// libpq's text format and turned into values by the column's type: integers and booleans become `.integer`,
/// floating and numeric values `.real` (or `.integer` when whole, as `sum()` over integers is `numeric`),
/// `bytea` `.blob`, the rest `.text`.
///
/// `@unchecked Sendable`: the `PGconn` is only touched with `lock` held (libpq connections are not safe to use
/// from two threads at once). The lock is recursive so a transaction body can run statements on the same
/// connection.
public final class PostgresConnection: SQLConnection, @unchecked Sendable {
    public var dialect: SQLDialect { .postgres }
    /// The connection string with any password removed: what errors and logs may show.
    public var displayTarget: String { redaction.display }
    /// Masks the password wherever libpq's messages repeat the connection string or a piece of it.
    private let redaction: ConnectionStringRedaction
    private let handle: OpaquePointer
    private let lock = NSRecursiveLock()
    private var transactionDepth = 0
    private var closed = false
    /// Statements this session has prepared, by parameter types and text: a repeated statement is neither parsed
    /// nor planned again (about a fifth of a millisecond for a claim or an enqueue), and the server plans a
    /// function call once. A statement is prepared the second time it runs, so text built with values in it
    /// (run once) takes no place; the places are bounded, and past the bound statements run unprepared.
    private var prepared: [String: String] = [:]
    private var seenOnce: Set<String> = []
    private var preparedCount = 0
    static let preparedLimit = 256

    /// Connects with a libpq connection string (`postgres://user@host:port/db?…` or `key=value …`).
    public init(_ connectionString: String) throws {
        let redaction = ConnectionStringRedaction(connectionString)
        self.redaction = redaction
        guard let connection = Self.connect(connectionString) else {
            throw StorageError.postgresConnection(target: redaction.display, message: "out of memory")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            // A string libpq cannot parse is echoed in its message, password and all.
            let message = redaction.scrubbed(Self.trimmed(PQerrorMessage(connection)))
            PQfinish(connection)
            throw StorageError.postgresConnection(target: redaction.display, message: message)
        }
        handle = connection
        // Notices (e.g. "relation already exists, skipping") would go to stderr, which is the command's output.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        try execute("SET client_min_messages = warning")
    }

    /// Settings every connection gets unless the connection string names them. Without them a link that goes
    /// away silently (a cable, a partition) holds a statement until the kernel gives up retransmitting, about 15
    /// minutes, and an idle listening connection never notices: a worker could neither retry nor say so.
    /// A statement whose bytes go unacknowledged for 10 s ends the connection; an idle one is probed after 10 s.
    static let defaultSettings: KeyValuePairs<String, String> = [
        "connect_timeout": "10", "tcp_user_timeout": "10000",
        "keepalives": "1", "keepalives_idle": "10", "keepalives_interval": "5", "keepalives_count": "3",
    ]

    /// `PQconnectdbParams` processes keywords in order and the last value wins, so the defaults go before the
    /// connection string (expanded as `dbname`), and whatever it says overrides them.
    private static func connect(_ connectionString: String) -> OpaquePointer? {
        let keywords = defaultSettings.map(\.key) + ["dbname"]
        let values = defaultSettings.map(\.value) + [connectionString]
        let keywordPointers = keywords.map { strdup($0) } + [nil]
        let valuePointers = values.map { strdup($0) } + [nil]
        defer { (keywordPointers + valuePointers).forEach { free($0) } }
        return keywordPointers.map { UnsafePointer($0) }.withUnsafeBufferPointer { keywordBuffer in
            valuePointers.map { UnsafePointer($0) }.withUnsafeBufferPointer { valueBuffer in
                PQconnectdbParams(keywordBuffer.baseAddress, valueBuffer.baseAddress, 1)
            }
        }
    }

    /// The value of a connection option in use (`PQconninfo`): what the string set, else the default above.
    public func setting(_ keyword: String) -> String? {
        lock.withLock {
            guard let options = PQconninfo(handle) else { return nil }
            defer { PQconninfoFree(options) }
            var option = options
            while let name = option.pointee.keyword {
                if String(cString: name) == keyword { return option.pointee.val.map { String(cString: $0) } }
                option += 1
            }
            return nil
        }
    }

    deinit {
        lock.withLock {
            guard !closed else { return }
            closed = true
            PQfinish(handle)
        }
    }

    /// True while the server is reachable over this connection as far as libpq knows (a failed statement on a
    /// broken connection sets it to false).
    public var isConnected: Bool { lock.withLock { PQstatus(handle) == CONNECTION_OK } }

    /// Whether `error`, thrown by a statement on this connection, means the server is out of reach (worth trying
    /// again later) rather than a refusal: an outage error, or any error once the connection has broken.
    public func isOutage(_ error: any Error) -> Bool {
        (error as? StorageError)?.isPostgresOutage == true || !isConnected
    }

    /// Opens the connection again with the same settings after it broke (the server restarted, the network
    /// came back). Notifications listened for must be subscribed again.
    public func reconnect() throws {
        try lock.withLock {
            PQreset(handle)
            prepared.removeAll()  // a new session has none
            seenOnce.removeAll()
            guard PQstatus(handle) == CONNECTION_OK else { throw connectionLost() }
            try execute("SET client_min_messages = warning")
        }
    }

    /// `reconnect`, unless the connection works: the look and the reopening under one hold of the lock, so two
    /// threads that met the same break (a worker's slot and its heartbeat) reopen it once, and neither resets the
    /// session the other has just opened.
    public func reconnectIfBroken() throws {
        try lock.withLock {
            guard PQstatus(handle) != CONNECTION_OK else { return }
            try reconnect()
        }
    }

    // MARK: Statements

    /// Runs one or more statements that take no parameters (a migration script).
    public func execute(_ sql: String) throws {
        try lock.withLock {
            let result = PQexec(handle, sql)
            defer { PQclear(result) }
            try check(result, sql: sql)
        }
    }

    @discardableResult
    public func run(_ sql: String, arguments: [SQLBindable]) throws -> Int {
        try lock.withLock {
            try withResult(sql, arguments) { result in Int(String(cString: PQcmdTuples(result))) ?? 0 }
        }
    }

    public func query(_ sql: String, arguments: [SQLBindable]) throws -> [Row] {
        try lock.withLock { try withResult(sql, arguments, Self.rows) }
    }

    // MARK: Transactions

    /// Runs `body` in a transaction (READ COMMITTED, PostgreSQL's default: the engine's statements lock the rows
    /// they change, and claims skip locked ones); nested calls become savepoints. Any thrown error rolls back.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try transaction(openingWith: nil, body)
    }

    /// `transaction(_:)` whose first statement, `opening` (without parameters), goes to the server with its `BEGIN`:
    /// one round trip fewer.
    public func transaction<T>(openingWith opening: String?, _ body: () throws -> T) throws -> T {
        try lock.withLock {
            let depth = transactionDepth
            let savepoint = "sp\(depth)"
            let start = depth == 0 ? "BEGIN" : "SAVEPOINT \(savepoint)"
            do {
                try execute(opening.map { "\(start); \($0)" } ?? start)
            } catch {
                // The opening statement failed after BEGIN took effect: end what it began.
                if depth == 0, opening != nil { try? execute("ROLLBACK") }
                if depth > 0, opening != nil { try? execute("ROLLBACK TO SAVEPOINT \(savepoint); RELEASE SAVEPOINT \(savepoint)") }
                throw error
            }
            transactionDepth += 1
            defer { transactionDepth -= 1 }
            do {
                let result = try body()
                try execute(depth == 0 ? "COMMIT" : "RELEASE SAVEPOINT \(savepoint)")
                return result
            } catch {
                if depth == 0 {
                    try? execute("ROLLBACK")
                } else {
                    try? execute("ROLLBACK TO SAVEPOINT \(savepoint); RELEASE SAVEPOINT \(savepoint)")
                }
                throw error
            }
        }
    }

    // MARK: LISTEN / NOTIFY

    /// Subscribes this connection to `channel` (a plain identifier chosen by the code, never user text).
    public func listen(_ channel: String) throws {
        precondition(channel.utf8.first.map { $0 >= 0x61 && $0 <= 0x7A } == true
                     && channel.utf8.allSatisfy { $0 == 0x5F || ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) },
                     "channel names are lowercase identifiers")
        try execute("LISTEN \(channel)")
    }

    /// One notification received on a channel this connection listens to.
    public struct Notification: Sendable, Equatable {
        public let channel: String
        public let payload: String
    }

    /// Waits up to `timeoutMilliseconds` for notifications and returns those that arrived (empty on timeout, or
    /// when `wakeUp` was raised). Notifications already received (during an earlier statement) are returned at once.
    public func waitForNotifications(timeoutMilliseconds: Int, wakeUp: WakeUpEvent? = nil) throws -> [Notification] {
        try lock.withLock {
            var pending = drainNotifications()
            if !pending.isEmpty { return pending }
            let socket = PQsocket(handle)
            guard socket >= 0 else { throw connectionLost() }
            var descriptors = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0)]
            if let wakeUp { descriptors.append(pollfd(fd: wakeUp.descriptor, events: Int16(POLLIN), revents: 0)) }
            let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(timeoutMilliseconds, 0)) * 1_000_000
            while pending.isEmpty {
                let now = DispatchTime.now().uptimeNanoseconds
                guard now < deadline else { break }
                let ready = poll(&descriptors, nfds_t(descriptors.count),
                                 Int32(min((deadline - now) / 1_000_000 + 1, UInt64(Int32.max))))
                if ready < 0 && errno == EINTR { continue }
                guard ready >= 0 else { throw connectionLost() }
                if ready == 0 { break }
                if descriptors[0].revents != 0 {
                    guard PQconsumeInput(handle) == 1 else { throw connectionLost() }
                    pending = drainNotifications()
                }
                if let wakeUp, descriptors[1].revents != 0, wakeUp.consume() { break }
            }
            return pending
        }
    }

    private func drainNotifications() -> [Notification] {
        var found: [Notification] = []
        while let notice = PQnotifies(handle) {
            found.append(Notification(channel: String(cString: notice.pointee.relname),
                                      payload: String(cString: notice.pointee.extra)))
            PQfreemem(notice)
        }
        return found
    }

    // MARK: Internals

    /// Executes `sql` with `arguments` bound out of line and hands the successful result to `read`.
    private func withResult<T>(_ sql: String, _ arguments: [SQLBindable], _ read: (OpaquePointer) throws -> T) throws -> T {
        let values = arguments.map(\.sqlValue)
        // Every parameter's bytes live in `storage` until the call returns.
        var storage: [[CChar]?] = []
        var types: [Oid] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        for value in values {
            switch value {
            case .null:
                storage.append(nil); types.append(0); lengths.append(0); formats.append(0)
            case let .integer(v):
                storage.append(Array(String(v).utf8CString)); types.append(20); lengths.append(0); formats.append(0)
            case let .real(v):
                storage.append(Array("\(v)".utf8CString)); types.append(701); lengths.append(0); formats.append(0)
            case let .text(v):
                storage.append(Array(v.utf8CString)); types.append(25); lengths.append(0); formats.append(0)
            case let .blob(v):
                storage.append(v.map { CChar(bitPattern: $0) }); types.append(17); lengths.append(Int32(v.count)); formats.append(1)
            }
        }
        let text = Placeholders.numbered(sql)
        let key = types.map(String.init).joined(separator: ",") + ";" + text
        let name = try preparedStatement(key, text: text, types: types, sql: sql)
        let result: OpaquePointer? = withPointers(storage) { pointers in
            if let name {
                return PQexecPrepared(handle, name, Int32(values.count), pointers, lengths, formats, 0)
            }
            return PQexecParams(handle, text, Int32(values.count), types, pointers, lengths, formats, 0)
        }
        defer { PQclear(result) }
        do {
            try check(result, sql: sql)
        } catch let error as StorageError where error.sqlstate == "0A000" && name != nil {
            // "cached plan must not change result type": another process migrated what the statement reads.
            // Prepared again at the next call (the old name is left to the session's end).
            prepared[key] = nil
            throw error
        }
        return try read(result!)
    }

    /// The name `text` is prepared under in this session, preparing it now on its second run; nil on its first,
    /// or past the bound.
    private func preparedStatement(_ key: String, text: String, types: [Oid], sql: String) throws -> String? {
        if let name = prepared[key] { return name }
        guard prepared.count < Self.preparedLimit else { return nil }
        guard seenOnce.remove(key) != nil else {
            if seenOnce.count >= Self.preparedLimit * 4 { seenOnce.removeAll() }
            seenOnce.insert(key)
            return nil
        }
        preparedCount += 1
        let name = "adapt_\(preparedCount)"
        let result = PQprepare(handle, name, text, Int32(types.count), types)
        defer { PQclear(result) }
        try check(result, sql: sql)
        prepared[key] = name
        return name
    }

    private func withPointers<R>(_ storage: [[CChar]?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        var pointers: [UnsafePointer<CChar>?] = []
        func step(_ index: Int) -> R {
            guard index < storage.count else { return body(pointers) }
            guard let bytes = storage[index] else {
                pointers.append(nil)
                return step(index + 1)
            }
            return bytes.withUnsafeBufferPointer { buffer in
                pointers.append(buffer.baseAddress ?? UnsafePointer(bitPattern: 1))
                return step(index + 1)
            }
        }
        return step(0)
    }

    private func check(_ result: OpaquePointer?, sql: String) throws {
        guard let result else { throw connectionLost(sql: sql) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return
        default:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
            let message = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) }
                ?? Self.trimmed(PQresultErrorMessage(result))
            // A server shutting down says so (57P01…) as it closes the socket; either way the connection is gone.
            if PQstatus(handle) != CONNECTION_OK || state.hasPrefix("08") || state.hasPrefix("57P") {
                throw connectionLost(sql: sql)
            }
            throw StorageError.postgres(sqlstate: state, message: redaction.scrubbed(message), sql: sql)
        }
    }

    private func connectionLost(sql: String? = nil) -> StorageError {
        .postgresConnectionLost(target: displayTarget, message: redaction.scrubbed(Self.trimmed(PQerrorMessage(handle))))
    }

    private static func rows(_ result: OpaquePointer) -> [Row] {
        let columnCount = PQnfields(result)
        let names = (0..<columnCount).map { String(cString: PQfname(result, $0)) }
        let types = (0..<columnCount).map { PQftype(result, $0) }
        return (0..<PQntuples(result)).map { row in
            Row(columns: names, values: (0..<columnCount).map { column in
                if PQgetisnull(result, row, column) == 1 { return .null }
                let text = String(cString: PQgetvalue(result, row, column))
                return value(text, type: types[Int(column)])
            })
        }
    }

    /// A text-format value of the type with OID `type` (pg_type.dat) as an `SQLValue`.
    private static func value(_ text: String, type: Oid) -> SQLValue {
        switch type {
        case 20, 21, 23, 26: return Int64(text).map(SQLValue.integer) ?? .text(text)
        case 16: return .integer(text == "t" ? 1 : 0)
        case 700, 701: return Double(text).map(SQLValue.real) ?? .text(text)
        case 1700: return Int64(text).map(SQLValue.integer) ?? Double(text).map(SQLValue.real) ?? .text(text)
        case 17: return .blob(hexBytes(text))
        default: return .text(text)
        }
    }

    /// `bytea` in its hex output format (`\x0a1b…`, PostgreSQL's default since 9.0).
    private static func hexBytes(_ text: String) -> Data {
        var bytes = Data()
        let digits = Array(text.utf8.dropFirst(2))
        bytes.reserveCapacity(digits.count / 2)
        func nibble(_ c: UInt8) -> UInt8 { c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x61 + 10 }
        var index = 0
        while index + 1 < digits.count {
            bytes.append(nibble(digits[index]) << 4 | nibble(digits[index + 1]))
            index += 2
        }
        return bytes
    }

    private static func trimmed(_ message: UnsafePointer<CChar>?) -> String {
        message.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) } ?? "unknown error"
    }

    /// `connectionString` without its password, in either form libpq accepts, whether or not it parses.
    public static func redacted(_ connectionString: String) -> String {
        ConnectionStringRedaction(connectionString).display
    }
}
