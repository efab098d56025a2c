import AdaptCore
import Foundation
import JobQueue
import Storage
import TestSupport

/// A fresh job engine of either backend with a manual clock: an SQLite file in a temporary directory, or a new
/// database in the test process's throwaway PostgreSQL cluster (`PostgresCluster.shared`).
final class EngineFixture: RunsTestJobs, Sendable {
    let backend: Backend
    let clock = ManualClock()
    let queue: any JobEngine
    let directory = TemporaryDirectory("engine-test")
    /// The PostgreSQL database's connection string (nil on SQLite), for a second connection as another host.
    let connectionString: String?
    private let sqlite: Database?
    private let postgres: PostgresConnection?

    init(_ backend: Backend, retryPolicy: RetryPolicy = .standard) throws {
        self.backend = backend
        switch backend {
        case .sqlite:
            let database = try Database(path: directory.file("adapt.sqlite").path, durability: .normal)
            sqlite = database
            postgres = nil
            connectionString = nil
            queue = try JobQueue(database: database, clock: clock, retryPolicy: retryPolicy)
        case .postgres:
            let target = try PostgresCluster.shared().makeDatabase()
            let engine = try PostgresJobQueue(connectionString: target, clock: clock, retryPolicy: retryPolicy)
            sqlite = nil
            postgres = engine.connection
            connectionString = target
            queue = engine
        }
    }

    /// Another engine on the same database (on PostgreSQL, a separate connection, as another host would have).
    func secondEngine() throws -> any JobEngine {
        switch backend {
        case .sqlite: return try JobQueue(database: try Database(path: directory.file("adapt.sqlite").path, durability: .normal), clock: clock)
        case .postgres: return try PostgresJobQueue(connectionString: connectionString!, clock: clock)
        }
    }

    var engine: any JobEngine { queue }

    /// Runs `sql`, written with `?` placeholders (numbered `$n` for PostgreSQL here), bypassing the engine.
    @discardableResult
    func run(_ sql: String, _ arguments: SQLBindable...) throws -> Int {
        if let sqlite { return try sqlite.run(sql, arguments: arguments) }
        return try postgres!.run(Self.numbered(sql), arguments: arguments)
    }

    func count(_ sql: String) throws -> Int {
        let value = try sqlite?.scalar(sql) ?? postgres!.scalar(sql)
        return Int(value.integerValue ?? -1)
    }

    /// Everything stored, as text: to prove a refused operation changed nothing.
    func snapshot() throws -> String {
        var text = ""
        for table in ["job_runs", "jobs", "job_dependencies", "job_events"] {
            let sql = "SELECT * FROM \(table) ORDER BY 1, 2"
            for row in try sqlite?.query(sql) ?? postgres!.query(sql) {
                text += "\(table): \(row["id"]) \(row["state"]) \(row["attempt"]) \(row["updated_at"]) \(row["run_at"]) "
                    + "\(row["lease_owner"]) \(row["output"]) \(row["error"]) \(row["to_state"]) \(row["job_id"])\n"
            }
        }
        return text
    }

    /// A completion hook that writes `sql` (no parameters) through the backend's own connection, then throws
    /// `failure` if given: to prove the hook and the completion commit together or not at all.
    func completeWithHook(_ claim: Claim, sql: String, failure: Error?) throws {
        if let engine = queue as? JobQueue {
            try engine.complete(claim, output: .object([:]), alsoInTransaction: { db in
                try db.execute(sql)
                if let failure { throw failure }
            })
        } else if let engine = queue as? PostgresJobQueue {
            try engine.complete(claim, output: .object([:]), alsoInTransaction: { connection in
                try connection.execute(sql)
                if let failure { throw failure }
            })
        }
    }

    static func numbered(_ sql: String) -> String {
        var index = 0
        return String(sql.flatMap { character -> [Character] in
            guard character == "?" else { return [character] }
            index += 1
            return Array("$\(index)")
        })
    }
}
