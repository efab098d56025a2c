import AdaptCore
import CommandLineKit
import Services

/// Options every `adapt` command accepts, and what they resolve to.
enum GlobalOptions {
    static let specs: [OptionSpec] = StateOptions.all

    static func stateDirectory(_ invocation: Invocation) throws -> StateDirectory {
        try StateOptions.stateDirectory(invocation.global)
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
}
