/// What stops a test's own infrastructure (a throwaway PostgreSQL cluster, a network namespace) from being set up:
/// a program it needs is missing, what it allocates is used up, or a command it runs failed.
public enum SetupProblem: Error, CustomStringConvertible {
    /// `need` says what is missing and how to get it.
    case missingTool(need: String)
    /// `remedy` says what is used up and how to free it.
    case exhausted(remedy: String)
    case commandFailed(command: String, status: Int32, output: String)

    public var description: String {
        switch self {
        case let .missingTool(need): return need
        case let .exhausted(remedy): return remedy
        case let .commandFailed(command, status, output):
            return "\(command) exited with status \(status): \(output.suffix(800))"
        }
    }
}
