/// The two databases a conformance test runs on: the state directory's SQLite file, or a database in the
/// test process's throwaway PostgreSQL cluster (`PostgresCluster.shared`).
public enum Backend: String, CaseIterable, CustomStringConvertible, Sendable {
    case sqlite, postgres
    public var description: String { rawValue }
}
