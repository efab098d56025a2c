import Foundation

/// The command line was wrong: an unknown option, a missing value, a malformed number. Exit code 2.
public struct UsageError: Error, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Ends the program with `code` after the command has printed what it wanted to (e.g. `replay --check`
/// reporting a difference). Nothing more is printed.
public struct ExitCode: Error {
    public let code: Int32
    public init(_ code: Int32) { self.code = code }
    public static let failure = ExitCode(1)
}

/// The one place any error becomes a message on stderr and an exit code: 2 for usage, 1 for everything else.
/// Messages may echo a name the user typed or a file held, so control characters are escaped, and what looks
/// like a password is masked (`CredentialMask`).
public enum ErrorReporter {
    public static func report(_ error: Error, tool: String, command: String? = nil) -> Int32 {
        func shown(_ message: String) -> String {
            TerminalText.escaped(CredentialMask.masked(message), keepingNewlines: true)
        }
        switch error {
        case let exit as ExitCode:
            return exit.code
        case let usage as UsageError:
            let hint = "see '\([tool, command].compactMap { $0 }.joined(separator: " ")) --help'"
            Console.error("\(tool): \(shown(usage.message)) (\(hint))")
            return 2
        case let described as CustomStringConvertible:
            Console.error("\(tool): error: \(shown(described.description))")
            return 1
        default:
            Console.error("\(tool): error: \(shown(error.localizedDescription))")
            return 1
        }
    }
}

/// Writes to stdout and stderr without buffering surprises between the two.
public enum Console {
    public static func print(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    public static func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    public static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// True when stdout is a terminal (live progress lines) rather than a pipe or file (JSON lines).
    public static var isTerminal: Bool { isatty(STDOUT_FILENO) == 1 }
    public static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }
}
