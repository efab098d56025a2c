import AdaptCore
import Foundation
import JobQueue
import Storage
import TestSupport

/// A fresh database in a temporary directory, a manual clock and a job engine over both.
final class QueueFixture: RunsTestJobs, Sendable {
    let directory = TemporaryDirectory("jobqueue-test")
    let clock = ManualClock()
    let database: Database
    let queue: JobQueue

    init(retryPolicy: RetryPolicy = .standard) throws {
        database = try Database(path: directory.file("adapt.sqlite").path, durability: .normal)
        queue = try JobQueue(database: database, clock: clock, retryPolicy: retryPolicy)
    }

    var engine: any JobEngine { queue }

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
