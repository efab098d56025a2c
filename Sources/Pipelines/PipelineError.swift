import AdaptCore
import Foundation

/// One thing wrong with a pipeline file, located by its JSON path (`train.rank`, `steps[2].depends_on[0]`).
public struct PipelineProblem: Sendable, Equatable, Codable, CustomStringConvertible {
    /// Where the problem is: a dotted JSON path, or "" for the document itself.
    public let path: String
    /// A whole sentence that starts with the path and says what would be accepted.
    public let message: String

    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    public var description: String { message }
}

/// Failures of the Pipelines module: pipeline files, run planning, scheduling and the device policy.
public enum PipelineError: Error, Equatable, CustomStringConvertible {
    case unreadable(path: String, reason: String)
    case notJSON(source: String, reason: String)
    /// Every problem found in one pass, in the order the fields are read.
    case invalid(source: String, problems: [PipelineProblem])
    case invalidLineage(String)
    case invalidNight(String)
    case invalidTimeOfDay(String)
    case seedOutOfRange(UInt64)
    case unitUnwritable(path: String, reason: String)
    /// A value bound for a unit file or cron line holds a control character; `field` names it (`state directory`).
    case controlCharacterInSchedule(field: String)
    case systemctlFailed(arguments: [String], status: Int32, output: String)

    public var description: String {
        switch self {
        case let .unreadable(path, reason):
            return "cannot read the pipeline file \(path): \(reason); check the path"
        case let .notJSON(source, reason):
            return "\(source) is not valid JSON: \(reason)"
        case let .invalid(source, problems):
            let count = problems.count == 1 ? "1 problem" : "\(problems.count) problems"
            return "\(source) is not a valid pipeline (\(count)):\n" + problems.map { "  - \($0.message)" }.joined(separator: "\n")
        case let .invalidLineage(name):
            return InvalidLineageName(name: name).description
        case let .invalidNight(text):
            return "night '\(PipelineError.abbreviated(text))' is not a date; write it as YYYY-MM-DD, e.g. 2026-11-30"
        case let .invalidTimeOfDay(text):
            return "'\(PipelineError.abbreviated(text))' is not a time of day; write it as HH:MM between 00:00 and 23:59, e.g. 02:00"
        case let .seedOutOfRange(seed):
            return "seed \(seed) is too large; seeds are stored as JSON numbers, use one below 2^53 (\(Pipeline.maximumSeed + 1))"
        case let .unitUnwritable(path, reason):
            return "cannot write \(path): \(reason); check that the directory is writable or set XDG_CONFIG_HOME"
        case let .controlCharacterInSchedule(field):
            return "the \(field) contains a control character (a newline, tab, escape…), which would end or alter a line "
                + "of the systemd unit and the cron line; use a path without one"
        case let .systemctlFailed(arguments, status, output):
            let detail = output.isEmpty ? "" : ": \(output.trimmingCharacters(in: .whitespacesAndNewlines).prefix(300))"
            return "'systemctl \(arguments.joined(separator: " "))' exited with status \(status)\(detail); "
                + "the unit files are written, enable the timer by hand or use the cron line"
        }
    }
}

extension PipelineError {
    /// At most 40 characters of `text` for a message, with control characters made visible.
    static func abbreviated(_ text: String) -> String {
        let visible = String(text.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : Character($0) })
        return visible.count > 40 ? String(visible.prefix(40)) + "…" : visible
    }

    /// Throws `.invalidLineage` unless `name` follows `Lineage.rule`.
    static func validate(lineage name: String) throws {
        guard Lineage.isValid(name) else { throw PipelineError.invalidLineage(name) }
    }
}
