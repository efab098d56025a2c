/// Why `adapt eval --lineage L --version N` did not score a version.
public enum VersionEvaluationError: Error, Equatable, CustomStringConvertible {
    case alreadyActive(lineage: String, version: String)

    public var description: String {
        switch self {
        case let .alreadyActive(lineage, version):
            return "\(lineage)/\(version) is the active version, the one a candidate is compared with; "
                + "evaluate another version, or roll back first ('adapt registry rollback --lineage \(lineage)')"
        }
    }
}
