import AdaptCore
import CommandLineKit
import Foundation
import Storage

/// Opening the state directory's database the way each kind of command needs it: a writing command creates the
/// state on first use, a reading one never creates anything.
public enum StateAccess {
    /// The state directory, which must exist with its database (a mistyped --state is an error, not a new state).
    public static func existing(_ state: StateDirectory) throws -> StateDirectory {
        try state.requireDirectory()
        try state.requireOwnOrEmpty()
        guard FileManager.default.fileExists(atPath: state.database.path) else {
            throw MissingStateError(path: state.database.path, missing: "database")
        }
        return state
    }

    /// Opens the state database of a command that only reads: never creates anything (a mistyped --state must
    /// not get an empty, "verified" answer), and works on a read-only directory or file system.
    public static func reading(_ state: StateDirectory) throws -> Database {
        let state = try existing(state)
        // Another program's database is refused before any mode in its directory changes.
        let database = try Database(readingAt: state.database.path)
        try database.refuseForeignTables()
        // A state someone made read-only (no write bit on its directory, or a read-only mount) is left exactly
        // as it is; any other is made private here too, as a writing command would.
        var status = stat()
        if access(state.root.path, W_OK) == 0, stat(state.root.path, &status) == 0, status.st_mode & 0o200 != 0 {
            report(state.tightenOwnEntries(), of: state)
        }
        return database
    }

    /// Opens the state database, creating the directory on first use (0700; files 0600). A state directory
    /// left readable by others (made by an older adapt, or copied) is made private, and that is said once.
    /// A directory that is not a state, or holds another program's database, is refused before anything in it
    /// is created or changed.
    public static func writing(_ state: StateDirectory, durability: Durability) throws -> Database {
        try state.requireOwnOrEmpty()
        if FileManager.default.fileExists(atPath: state.database.path) {
            try Database(readingAt: state.database.path).refuseForeignTables()
        }
        report(try state.createPrivate(), of: state)
        return try Database(path: state.database.path, durability: durability)
    }

    /// An existing state's database opened for writing, for a command that only changes what is already
    /// stored (cancel, retry, forget, rollback …): a mistyped --state is refused, not made into a new state.
    public static func writingExisting(_ state: StateDirectory, durability: Durability) throws -> Database {
        try writing(existing(state), durability: durability)
    }

    /// The database of a command that waits for work (`adapt work`, `adapt worker`), in a state directory that must
    /// exist: a mistyped --state names a directory nobody made and is refused, creating nothing. In a directory that
    /// exists (its models fetched, say) the job tables are made on first use, since a worker service may start
    /// before the first run is enqueued.
    public static func waitingForWork(_ state: StateDirectory, durability: Durability) throws -> Database {
        try state.requireDirectory()
        return try writing(state, durability: durability)
    }

    /// The state directory of a worker whose job tables live in PostgreSQL: it keeps this host's models and exports
    /// only, so it is checked and made private as `waitingForWork` would, and no database is opened in it.
    public static func waitingForWorkElsewhere(_ state: StateDirectory) throws {
        try state.requireDirectory()
        try state.requireOwnOrEmpty()
        report(try state.createPrivate(), of: state)
    }

    /// Says once what making the state private changed, or could not change.
    private static func report(_ tightened: PrivateFiles.Tightening, of state: StateDirectory) {
        if tightened.paths > 0 {
            Console.error("adapt: made \(tightened.paths) path(s) under \(state.root.path) private (directories 0700, files 0600); "
                          + "they were readable by other users")
        }
        if tightened.unchanged > 0 {
            Console.error("adapt: warning: \(tightened.unchanged) path(s) under \(state.root.path) are readable by other users "
                          + "and could not be changed (a read-only file system, or files of another user); chmod them 0600, directories 0700")
        }
    }
}
