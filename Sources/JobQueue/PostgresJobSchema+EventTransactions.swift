import Storage

extension PostgresJobSchema {
    /// Each event records the transaction that wrote it, so a reader tailing the event stream can tell which
    /// events no transaction can still add to (`PostgresJobQueue.tail(run:job:after:limit:)`).
    ///
    /// Event ids are drawn when a row is inserted and transactions commit in any order, so a tail by id alone
    /// skips an event that commits after one with a higher id. PostgreSQL's snapshot says instead which
    /// transactions have ended: every one below `pg_snapshot_xmin(pg_current_snapshot())`.
    ///
    /// The events written before this migration get transaction 0, below every real one: they have all committed,
    /// since `ALTER TABLE` waits for every transaction that wrote to the table. A constant default fills them
    /// without rewriting the table; the default for new rows is set after it. `pg_current_xact_id()` gives the
    /// top-level transaction's id inside a savepoint too (PostgreSQL docs, 9.27 "System Information Functions").
    static let eventTransactions = """
    ALTER TABLE job_events ADD COLUMN xact xid8 NOT NULL DEFAULT '0';
    ALTER TABLE job_events ALTER COLUMN xact SET DEFAULT pg_current_xact_id();
    CREATE INDEX job_events_by_transaction ON job_events (xact, id);
    """
}
