extension JobSchema {
    /// A timeout of each job's own (`timeout_ms`: how long one attempt may run, a pipeline step's `timeout_seconds`;
    /// `JobTimeout`). Jobs stored before have none, so they run as they did. `ADD COLUMN` leaves the rows and every
    /// other rule as they are, and a fresh database reaches the same table through the same statement.
    static let version5 = """
    ALTER TABLE jobs ADD COLUMN timeout_ms INTEGER CHECK (timeout_ms IS NULL OR timeout_ms > 0);
    """
}
