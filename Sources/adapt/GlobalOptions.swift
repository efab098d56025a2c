import AdaptCore
import CommandLineKit
import CommandLineState
import Foundation
import Services

/// Options every `adapt` command accepts, and what they resolve to.
enum GlobalOptions {
    static let specs: [OptionSpec] = StateOptions.all + [postgres.spec]

    /// `--database postgres://…`: the job engine (and with `work`, every row and blob of the steps) on a PostgreSQL server
    /// instead of the state directory's file.
    static let postgres = Option<String?>(
        "database", value: "URL", default: nil,
        help: "a PostgreSQL database for the job, data, registry and gc commands, enqueue nightly, work, replay, report and run export, postgres://USER@HOST/DB (default: the state directory's, or ADAPT_DATABASE)"
    ) { text in try postgresURL(text) }

    /// A value that is not a URL is not repeated: it may be a libpq `key=value` string with a password in it.
    static func postgresURL(_ text: String) throws -> String {
        guard text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") else {
            let form = isKeyValueConnectionString(text) ? "a libpq key=value string, which is not accepted" : "not such a URL"
            throw UsageError("expects a postgres://USER@HOST[:PORT]/DATABASE URL (the SQLite database is the state directory's, "
                             + "--state); the value given is \(form) (not shown, as it may hold a password)")
        }
        return text
    }

    /// `host=… password=…`: libpq's other connection string form (or its environment's, `PGPASSWORD=…`), told
    /// apart from a path so that it is neither echoed nor taken for a directory name.
    static func isKeyValueConnectionString(_ text: String) -> Bool {
        text.range(of: #"(?i)(^|\s)(pg)?(host|hostaddr|port|dbname|database|user|password|passfile|sslmode|service)\s*="#,
                   options: .regularExpression) != nil
    }

    /// The PostgreSQL database named by `--database`, else by `ADAPT_DATABASE` (an empty one is unset); nil for
    /// the state directory's.
    static func postgresDatabase(_ invocation: Invocation,
                                 environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String? {
        if let given = try invocation.global[postgres] { return given }
        guard let text = environment["ADAPT_DATABASE"], !text.isEmpty else { return nil }
        do { return try postgresURL(text) } catch let error as UsageError { throw UsageError("ADAPT_DATABASE: \(error.message)") }
    }

    /// The state directory. A command that reaches for it while a PostgreSQL database is named needs what is not
    /// on PostgreSQL yet: it is refused, rather than silently using the state directory.
    static func stateDirectory(_ invocation: Invocation) throws -> StateDirectory {
        if let url = try postgresDatabase(invocation) {
            throw NotOnPostgresError(needs: "the state directory (the nightly steps and their files)",
                                     connectionString: url)
        }
        return try StateOptions.stateDirectory(invocation.global)
    }

    /// The state directory whichever database is named: with PostgreSQL, the host's own, for what stays on this
    /// machine (its models, the active exports servers read, scratch), as `enqueue nightly`, `work` and `registry
    /// promote`/`rollback` use it there.
    static func hostState(_ invocation: Invocation) throws -> StateDirectory {
        try StateOptions.stateDirectory(invocation.global)
    }

    /// The recorded runs a command reads (`run export`, `report`, live progress): in the PostgreSQL database named,
    /// else in the state directory, which must exist and is only read.
    static func recordedRuns(_ invocation: Invocation) throws -> RecordedRuns {
        if let url = try postgresDatabase(invocation) { return try RecordedRuns(postgres: url) }
        let state = try existingState(invocation)
        return try RecordedRuns(database: try StateAccess.reading(state), blobs: state.blobs)
    }

    /// The database of a command that only reads (`StateAccess.reading`).
    static func readOnlyDatabase(_ invocation: Invocation) throws -> Database {
        try StateAccess.reading(try stateDirectory(invocation))
    }

    /// The state directory, which must exist with its database.
    static func existingState(_ invocation: Invocation) throws -> StateDirectory {
        try StateAccess.existing(try stateDirectory(invocation))
    }

    /// The database of a command that writes (`StateAccess.writing`); a bad durability is refused before
    /// anything is created.
    static func database(_ invocation: Invocation) throws -> Database {
        let state = try stateDirectory(invocation)
        return try StateAccess.writing(state, durability: try StateOptions.durability(invocation.global))
    }

    /// The database of a command that waits for work (`StateAccess.waitingForWork`): a state directory that does not
    /// exist is refused, not created.
    static func workerDatabase(_ invocation: Invocation) throws -> Database {
        let state = try stateDirectory(invocation)
        return try StateAccess.waitingForWork(state, durability: try StateOptions.durability(invocation.global))
    }

    /// The database of a command that only changes what a state already holds (`StateAccess.writingExisting`):
    /// a state that does not exist is refused, not created.
    static func existingDatabase(_ invocation: Invocation) throws -> Database {
        let state = try stateDirectory(invocation)
        return try StateAccess.writingExisting(state, durability: try StateOptions.durability(invocation.global))
    }
}
