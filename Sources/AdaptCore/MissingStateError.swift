/// `--state` names no state: a command that only reads or changes what a state holds, or waits for work in it
/// (`adapt worker`, `adapt work` and the step executables), refuses it rather than create one (exit 1).
public struct MissingStateError: Error, CustomStringConvertible {
    public let path: String
    /// "directory" or "database".
    public let missing: String

    public init(path: String, missing: String) {
        self.path = path
        self.missing = missing
    }

    public var description: String {
        "no adapt state at \(path) (the \(missing) does not exist); nothing was created. Check --state (or ADAPT_STATE), "
            + "or create a state by writing to it: `adapt data import FILE --lineage L` or `adapt enqueue …`"
    }
}
