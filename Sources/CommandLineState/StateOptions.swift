import AdaptCore
import CommandLineKit
import Foundation
import Storage

/// `--state DIR` and `--durability full|normal` with their environment fallbacks (`ADAPT_STATE`,
/// `ADAPT_DURABILITY`): the options `adapt` and every worker executable take, declared and resolved here
/// once so that a worker started by `adapt work` reads the state the command line named, the same way.
public enum StateOptions {
    /// `--state ""` would otherwise resolve to the working directory and put a database there.
    public static let state = Option<String?>(
        "state", value: "DIR", default: nil, help: "state directory (default ./state, or ADAPT_STATE)"
    ) { text in
        guard !text.isEmpty else { throw UsageError("needs a directory, got an empty path") }
        return text
    }

    public static let durability = Option<Durability?>(
        "durability", value: "full|normal", default: nil, help: "commit durability (default full, or ADAPT_DURABILITY)"
    ) { text in try Durability(parsing: text) }

    public static let all: [OptionSpec] = [state.spec, durability.spec]

    /// `--state` wins, then `ADAPT_STATE`, then `./state`.
    public static func stateDirectory(_ global: ParsedArguments,
                                      environment: [String: String] = ProcessInfo.processInfo.environment) throws -> StateDirectory {
        StateDirectory.resolve(option: try global[state], environment: environment)
    }

    /// `--durability` wins, then `ADAPT_DURABILITY` (an empty one is unset), then full.
    public static func durability(_ global: ParsedArguments,
                                  environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Durability {
        if let given = try global[durability] { return given }
        guard let text = environment["ADAPT_DURABILITY"], !text.isEmpty else { return .full }
        do { return try Durability(parsing: text) } catch { throw UsageError("ADAPT_DURABILITY: \(error)") }
    }

    /// The options that hand this state to a child executable (the workers `adapt work` starts): the resolved
    /// state directory, and the durability when the command line gave one (`ADAPT_DURABILITY` is inherited).
    public static func forwarded(_ global: ParsedArguments,
                                 environment: [String: String] = ProcessInfo.processInfo.environment) throws -> [String] {
        var arguments = ["--state", try stateDirectory(global, environment: environment).root.path]
        if let given = try global[durability] { arguments += ["--durability", given.rawValue] }
        return arguments
    }
}
