import AdaptCore
import Storage

/// How an idle worker on PostgreSQL learns of new work: `jobs_notify_claimable` notifies `adapt_jobs` with the
/// job's kind whenever a job becomes ready or failed (an enqueue, a dependency finishing, a retry, a rescue),
/// delivered when that transaction commits. The worker listens on a connection of its own, since waiting
/// holds it, and polls for nothing in between.
extension PostgresJobQueue {
    /// Waits until a job of one of `kinds` may have become claimable, or `timeoutMilliseconds` pass (the caller
    /// passes the time until `nextWakeTime`, which no notification announces). True when notified of one of
    /// `kinds`. Call `hasClaimableWork` (or claim) before the first wait: notifications sent before this queue
    /// first listened are not delivered.
    public func waitForWork(kinds: [String], timeoutMilliseconds: Int) throws -> Bool {
        let connection = try listening()
        let deadline = clock.nowMilliseconds() + Int64(timeoutMilliseconds)
        while true {
            let left = Int(deadline - clock.nowMilliseconds())
            guard left > 0 else { return false }
            let received = try connection.waitForNotifications(timeoutMilliseconds: left)
            if received.contains(where: { kinds.contains($0.payload) }) { return true }
            if received.isEmpty { return false }
        }
    }

    /// Opens the listening connection on first use (or again after it broke).
    public func startListening() throws {
        _ = try listening()
    }

    private func listening() throws -> PostgresConnection {
        try listener.withLock { current in
            if let current, current.isConnected { return current }
            let opened = try PostgresConnection(connectionString)
            try opened.listen(PostgresJobSchema.channel)
            current = opened
            return opened
        }
    }
}

extension PostgresJobQueue: JobEngine {
    public typealias Connection = PostgresConnection
}
