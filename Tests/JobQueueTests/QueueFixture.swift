import AdaptCore
import Foundation
import JobQueue
import Storage
import TestSupport

/// A fresh database in a temporary directory, a manual clock and a job engine over both.
final class QueueFixture: Sendable {
    let directory = TemporaryDirectory("jobqueue-test")
    let clock = ManualClock()
    let database: Database
    let queue: JobQueue

    init(retryPolicy: RetryPolicy = .standard) throws {
        database = try Database(path: directory.file("adapt.sqlite").path, durability: .normal)
        queue = try JobQueue(database: database, clock: clock, retryPolicy: retryPolicy)
    }

    /// A run of independent steps named a, b, c, … of kind `kind`.
    @discardableResult
    func enqueue(_ names: [String], kind: String = "test", dependsOn: [String: [String]] = [:],
                 maxAttempts: Int = 3, uniqueKey: String? = nil) throws -> EnqueueResult {
        let steps = names.map {
            RunDescription.Step(name: $0, kind: kind, input: .object(["name": .string($0)]),
                                dependsOn: dependsOn[$0] ?? [], maxAttempts: maxAttempts)
        }
        return try queue.enqueue(RunDescription(kind: "test", uniqueKey: uniqueKey, steps: steps))
    }

    func claim(_ kinds: [String] = ["test"], owner: String = "w1", lease: Int64 = 1_000) throws -> Claim? {
        try queue.claim(kinds: kinds, owner: owner, leaseMilliseconds: lease)
    }

    func state(_ id: JobID) throws -> JobState { try queue.job(id).state }

    func count(_ sql: String) throws -> Int { Int(try database.scalar(sql).integerValue ?? -1) }

    /// Everything stored, as text: to prove a refused operation changed nothing.
    func snapshot() throws -> String {
        var text = ""
        for table in ["job_runs", "jobs", "job_dependencies", "job_events"] {
            for row in try database.query("SELECT * FROM \(table) ORDER BY 1, 2") {
                text += "\(table): \(row["id"]) \(row["state"]) \(row["attempt"]) \(row["updated_at"]) \(row["run_at"]) "
                    + "\(row["lease_owner"]) \(row["output"]) \(row["error"]) \(row["to_state"]) \(row["job_id"])\n"
            }
        }
        return text
    }
}
