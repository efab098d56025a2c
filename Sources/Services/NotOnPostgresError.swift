import Storage

/// A command was pointed at a PostgreSQL database (`--database postgres://…` or `ADAPT_DATABASE`) but needs what
/// lives only in the state directory so far. Nothing was read or written.
public struct NotOnPostgresError: Error, CustomStringConvertible {
    /// What is missing on PostgreSQL, e.g. "the nightly steps and their files".
    public let needs: String
    /// The database named, its password removed.
    public let target: String

    public init(needs: String, target: String) {
        self.needs = needs
        self.target = target
    }

    /// The error for `connectionString`, shown without its password.
    public init(needs: String, connectionString: String) {
        self.init(needs: needs, target: PostgresConnection.redacted(connectionString))
    }

    public var description: String {
        "this command needs \(needs), which are not on PostgreSQL yet (\(target)); on PostgreSQL run the job "
            + "commands (enqueue, worker, runs, jobs, show, events, cancel, retry, rescue, prune-history), the data and "
            + "registry commands, gc, the nightly steps (enqueue nightly, work), replay, report and run export. Drop --database and unset "
            + "ADAPT_DATABASE to use the state directory"
    }
}
