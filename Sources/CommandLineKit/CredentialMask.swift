import Foundation

/// The last guard before an error reaches a person: a message may repeat an argument the user typed, and an
/// argument may be a connection string put in the wrong place (`adapt jobs postgres://u:pw@host`). Whatever a
/// message holds, a URL's `user:password@` and a `password=…` lose the password here.
public enum CredentialMask {
    /// `message` with `scheme://user:***@` (up to the last `@` of the word, as a password may hold `@`) and
    /// `password=***`.
    public static func masked(_ message: String) -> String {
        message
            .replacingOccurrences(of: #"([A-Za-z][A-Za-z0-9+.-]*://[^:/@\s'"]*:)[^\s'"]*@"#, with: "$1***@",
                                  options: .regularExpression)
            .replacingOccurrences(of: #"(?i)(password\s*=\s*)('[^']*'?|[^\s'"]+)"#, with: "$1***", options: .regularExpression)
    }
}
