/// Why `adapt work` could not start supervising a state directory.
public enum SupervisorError: Error, Equatable, CustomStringConvertible {
    case alreadySupervised(path: String, pid: Int32?)
    case lockUnavailable(path: String, reason: String)

    public var description: String {
        switch self {
        case let .alreadySupervised(path, pid):
            let holder = pid.map { "adapt work (pid \($0))" } ?? "adapt work"
            return "another \(holder) already runs the workers of this state directory (it holds \(path)); a second "
                + "one would run every step kind twice. Stop that one first, or wait for it to exit"
        case let .lockUnavailable(path, reason):
            return "cannot take the supervisor lock \(path): \(reason); check that the state directory is writable"
        }
    }
}
