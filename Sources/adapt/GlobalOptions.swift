import AdaptCore
import CommandLineKit
import Foundation
import Storage

/// Options every `adapt` command accepts, and what they resolve to.
enum GlobalOptions {
    static let specs: [OptionSpec] = StateOptions.all

    static func stateDirectory(_ invocation: Invocation) throws -> StateDirectory {
        try StateOptions.stateDirectory(invocation.global)
    }

    static func durability(_ invocation: Invocation) throws -> Durability {
        try StateOptions.durability(invocation.global)
    }

    /// Opens the state database of a command that only reads: never creates anything (a mistyped --state must
    /// not get an empty, "verified" answer), and works on a read-only directory or file system.
    static func readOnlyDatabase(_ invocation: Invocation) throws -> Database {
        let state = try existingState(invocation)
        // A state someone made read-only (no write bit on its directory, or a read-only mount) is left exactly
        // as it is; any other is made private here too, as a writing command would.
        var status = stat()
        if access(state.root.path, W_OK) == 0, stat(state.root.path, &status) == 0, status.st_mode & 0o200 != 0 {
            report(PrivateFiles.tighten(state.root), of: state)
        }
        return try Database(readingAt: state.database.path)
    }

    /// The state directory, which must exist with its database (a mistyped --state is an error, not a new state).
    static func existingState(_ invocation: Invocation) throws -> StateDirectory {
        let state = try stateDirectory(invocation)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: state.root.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw MissingStateError(path: state.root.path, missing: "directory")
        }
        guard FileManager.default.fileExists(atPath: state.database.path) else {
            throw MissingStateError(path: state.database.path, missing: "database")
        }
        return state
    }

    /// Opens the state database, creating the directory on first use (0700; files 0600). A state directory
    /// left readable by others (made by an older adapt, or copied) is made private, and that is said once.
    static func database(_ invocation: Invocation) throws -> Database {
        let state = try stateDirectory(invocation)
        let durability = try durability(invocation)  // a bad one is refused before anything is created
        report(try state.createPrivate(), of: state)
        return try Database(path: state.database.path, durability: durability)
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

/// `--state` names no state: a command that only reads refuses it rather than create one (exit 1).
struct MissingStateError: Error, CustomStringConvertible {
    let path: String
    /// "directory" or "database".
    let missing: String

    var description: String {
        "no adapt state at \(path) (the \(missing) does not exist); nothing was created. Check --state (or ADAPT_STATE), "
            + "or create a state by writing to it: `adapt data import FILE --lineage L` or `adapt enqueue …`"
    }
}
