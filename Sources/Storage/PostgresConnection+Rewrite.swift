/// Rewriting tables so that deleted rows leave the database's files (erasure, collected blobs).
extension PostgresConnection {
    /// Rewrites `tables` with `VACUUM FULL` (new files holding the rows it keeps; the old ones truncated and
    /// unlinked) and says whether every row deleted before it is gone from them. Call it outside any transaction.
    ///
    /// VACUUM FULL keeps a deleted row that some snapshot could still see, whichever backend holds it, including
    /// one that no session listing shows (a backend still logging in holds one for every database). It counts the
    /// rows it wrote in `pg_class.reltuples`, so more of them than the table's live rows means a deleted one was
    /// kept: the tables are rewritten once more, when such a snapshot has usually ended, and false is returned if
    /// one was kept again, or the rewrite failed (its locks not free within 30 s, or an error). Exact up to about
    /// 16 million rows a table (`reltuples` is a 4-byte float); rows inserted after the rewrite can hide a kept one.
    public func rewriteWithoutDeletedRows(_ tables: [String]) -> Bool {
        try? execute("SET lock_timeout = '30s'")
        defer { try? execute("RESET lock_timeout") }
        for _ in 0..<2 {
            guard (try? execute("VACUUM (FULL) " + tables.joined(separator: ", "))) != nil else { return false }
            let checks = tables.map { "(SELECT reltuples FROM pg_class WHERE oid = '\($0)'::regclass) <= (SELECT count(*) FROM \($0))" }
            if (try? scalar("SELECT " + checks.joined(separator: " AND ")).integerValue) == 1 { return true }
        }
        return false
    }
}
