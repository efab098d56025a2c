import Foundation

/// Keeps a connection string's password out of every message: the form of the string errors and logs may show,
/// and the scrubbing of libpq's own messages, which repeat parts of the string they could not use.
///
/// The string may be malformed (that is when libpq echoes it), so nothing here relies on it parsing: every piece
/// that could be a password under some reading is treated as one. A password holding `@` makes libpq take the
/// text after its first `@` for the host; one holding `/` makes the text before it a port; `&` inside a
/// `?password=` value starts a new parameter. Each such piece is scrubbed.
public struct ConnectionStringRedaction: Sendable {
    /// What stands in for a removed secret.
    public static let mask = "***"
    /// Pieces shorter than this are left: one character says nothing of a password, and scrubbing it would
    /// garble every word of a message that holds it.
    static let shortestSecret = 2

    /// The connection string with every password removed: what errors and logs may show.
    public let display: String
    /// Every text that could be a password or a piece of one, longest first.
    private let secrets: [String]
    /// libpq echoes a string it cannot parse whole: that is replaced by `display` before pieces are masked.
    private let wholeString: String

    public init(_ connectionString: String, environment: [String: String] = ProcessInfo.processInfo.environment) {
        var candidates = Self.secretCandidates(connectionString)
        // libpq reads PGPASSWORD when the string names no password; it never echoes it, but nothing will.
        if let password = environment["PGPASSWORD"] { candidates.append(password) }
        secrets = Self.expanded(candidates)
        display = Self.scrub(Self.structuralDisplay(connectionString), secrets: secrets, whole: [])
        wholeString = connectionString
    }

    /// `message` (from libpq or the server) with the connection string shown as `display`, and every secret
    /// piece masked.
    public func scrubbed(_ message: String) -> String {
        Self.scrub(message, secrets: secrets, whole: [(wholeString, display)])
    }

    // MARK: - The shown form

    /// `scheme://user:***@host…` for a URL (everything before the last `@` is credentials), `password=***` for a
    /// query parameter or a `key=value` string.
    static func structuralDisplay(_ text: String) -> String {
        guard let scheme = text.range(of: "://") else {
            return text.replacingOccurrences(of: #"(?i)(password\s*=\s*)('([^'\\]|\\.)*'?|\S+)"#, with: "$1\(mask)",
                                             options: .regularExpression)
        }
        var shown = String(text[..<scheme.upperBound])
        var rest = String(text[scheme.upperBound...])
        if let lastAt = rest.lastIndex(of: "@") {
            let credentials = rest[..<lastAt]
            if let colon = credentials.firstIndex(of: ":") {
                shown += credentials[..<colon] + ":" + mask + "@"
                rest = String(rest[rest.index(after: lastAt)...])
            }
        }
        // The value may hold `&` (libpq would read a new parameter there), so everything after `password=` goes.
        shown += rest.replacingOccurrences(of: #"(?i)(password=).*$"#, with: "$1\(mask)", options: .regularExpression)
        return shown
    }

    // MARK: - What could be a password

    /// Each text that some reading of `text` makes a password.
    static func secretCandidates(_ text: String) -> [String] {
        var candidates: [String] = []
        if let scheme = text.range(of: "://") {
            let rest = text[scheme.upperBound...]
            // user:password@host, where the password may itself hold `@`: from the first `:` to each `@`.
            if let colon = rest.firstIndex(of: ":") {
                var index = rest.index(after: colon)
                while let at = rest[index...].firstIndex(of: "@") {
                    candidates.append(String(rest[rest.index(after: colon)..<at]))
                    index = rest.index(after: at)
                }
            }
            // …?password=value&…: the value may run to the end of the string.
            for match in matches(of: #"(?i)password=(.*)$"#, in: text) { candidates.append(match) }
        } else {
            for match in matches(of: #"(?i)password\s*=\s*('(?:[^'\\]|\\.)*'?|\S+)"#, in: text) {
                candidates.append(match)
                let unquoted = match.trimmingCharacters(in: CharacterSet(charactersIn: "'"))
                candidates.append(unquoted.replacingOccurrences(of: #"\\(.)"#, with: "$1", options: .regularExpression))
            }
        }
        return candidates
    }

    /// The candidates with their percent-decoded forms and the pieces a parser could cut them into (at a delimiter,
    /// or at a `%` escape it could not decode), longest first.
    static func expanded(_ candidates: [String]) -> [String] {
        let delimiters = CharacterSet(charactersIn: "@/:?&=#,%[]'\" \t\n")
        var all = Set<String>()
        for candidate in candidates {
            for form in [candidate, candidate.removingPercentEncoding].compactMap({ $0 }) {
                all.insert(form)
                for piece in form.components(separatedBy: delimiters) { all.insert(piece) }
            }
        }
        return all.filter { $0.count >= shortestSecret }.sorted { $0.count != $1.count ? $0.count > $1.count : $0 < $1 }
    }

    private static func matches(of pattern: String, in text: String) -> [String] {
        guard let expression = try? NSRegularExpression(pattern: pattern) else { return [] }
        let range = NSRange(text.startIndex..., in: text)
        return expression.matches(in: text, range: range).compactMap { match in
            Range(match.range(at: 1), in: text).map { String(text[$0]) }
        }
    }

    private static func scrub(_ message: String, secrets: [String], whole: [(String, String)]) -> String {
        var text = message
        for (original, shown) in whole where !original.isEmpty {
            text = text.replacingOccurrences(of: original, with: shown)
        }
        for secret in secrets { text = text.replacingOccurrences(of: secret, with: mask) }
        return text
    }
}
