/// `--state` named an existing directory that is not an adapt state (a home folder, a project): the engine
/// neither creates its database there nor changes a mode in it.
public struct ForeignDirectoryError: Error, Equatable, CustomStringConvertible {
    public let path: String
    /// Entries the engine did not make, sorted.
    public let strangers: [String]

    public init(path: String, strangers: [String]) {
        self.path = path
        self.strangers = strangers
    }

    public var description: String {
        let shown = strangers.prefix(3).map { "'\($0)'" }.joined(separator: ", ") + (strangers.count > 3 ? ", …" : "")
        return "\(path) is not an adapt state directory: it has no adapt.sqlite and holds \(strangers.count) "
            + "entr\(strangers.count == 1 ? "y" : "ies") adapt did not make (\(shown)); nothing in it was created or changed. "
            + "Pass --state (or ADAPT_STATE) with a new or empty directory, or with an existing state"
    }
}
