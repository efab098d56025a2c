import Foundation

/// Rewriting tables so that deleted rows leave the database's files (erasure, collected blobs).
extension PostgresConnection {
    /// Rewrites `tables` with `VACUUM FULL` (new files holding the rows it keeps; the old ones truncated and
    /// unlinked) and says whether every row deleted before it is gone from them. Call it outside any transaction.
    ///
    /// VACUUM FULL keeps a deleted row that some snapshot could still see, and its own snapshot counts every
    /// transaction running anywhere on the server, in any database: one that began before the deletion committed
    /// makes it copy the deleted rows. So it first waits (up to `waitSeconds`) until every transaction older than
    /// the deletion has ended, then rewrites. It also counts the rows it wrote in `pg_class.reltuples`, so more of
    /// them than the table's live rows means a deleted one was kept: the tables are rewritten once more, and false
    /// is returned if one was kept again, an old transaction outlived the wait, or the rewrite failed (its locks not
    /// free within 30 s, or an error). Exact up to about 16 million rows a table (`reltuples` is a 4-byte float).
    public func rewriteWithoutDeletedRows(_ tables: [String], waitSeconds: Double = 30) -> Bool {
        guard waitForTransactionsBegunEarlier(seconds: waitSeconds) else { return false }
        try? execute("SET lock_timeout = '30s'")
        defer { try? execute("RESET lock_timeout") }
        for _ in 0..<2 {
            guard (try? execute("VACUUM (FULL) " + tables.joined(separator: ", "))) != nil else { return false }
            let checks = tables.map { "(SELECT reltuples FROM pg_class WHERE oid = '\($0)'::regclass) <= (SELECT count(*) FROM \($0))" }
            if (try? scalar("SELECT " + checks.joined(separator: " AND ")).integerValue) == 1 { return true }
        }
        return false
    }

    /// Waits until no transaction that began before this call is still running on the server: a new transaction
    /// id is drawn (ids grow, so every earlier transaction has a lower one), and the oldest running id is read
    /// until it has passed it. False when that takes longer than `seconds`.
    private func waitForTransactionsBegunEarlier(seconds: Double) -> Bool {
        guard let mark = try? scalar("SELECT pg_current_xact_id()::text::bigint").integerValue else { return false }
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            if let oldest = try? scalar("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint").integerValue, oldest > mark {
                return true
            }
            if Date() >= deadline { return false }
            usleep(20_000)
        }
    }
}
