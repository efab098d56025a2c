import Storage

/// The prune marks, a component of their own (`registry_pruning`), so that they migrate apart from the registry's
/// own list of migrations. The table is created by the first prune that deletes something; until then no version
/// is pruned, and a read-only state never needs it.
///
/// - `registry_pruned`: one row per version whose adapter file `adapt registry prune` deleted; the version's row
///   stays (history rows and gate reports name it). A mark is never removed: the file is gone for good.
public enum RegistryPruneSchema {
    public static let schema = Schema(component: "registry_pruning", migrations: [
        """
        CREATE TABLE registry_pruned (
            version_id INTEGER PRIMARY KEY REFERENCES registry_versions (id),
            pruned_at INTEGER NOT NULL
        ) STRICT;
        CREATE TRIGGER registry_pruned_never_rewritten BEFORE UPDATE ON registry_pruned
        BEGIN SELECT RAISE(ABORT, 'registry_pruned rows are never rewritten'); END;
        CREATE TRIGGER registry_pruned_never_deleted BEFORE DELETE ON registry_pruned
        BEGIN SELECT RAISE(ABORT, 'registry_pruned rows are never deleted'); END;
        """,
    ])

    public static let postgres = Schema(component: "registry_pruning", migrations: [
        """
        CREATE TABLE registry_pruned (
            version_id BIGINT PRIMARY KEY REFERENCES registry_versions (id),
            pruned_at BIGINT NOT NULL
        );
        CREATE TRIGGER registry_pruned_never_rewritten BEFORE UPDATE OR DELETE ON registry_pruned
            FOR EACH ROW EXECUTE FUNCTION registry_refuse('registry_pruned rows are never rewritten or deleted');
        """,
    ])

    /// Creates the table (or brings it up to date) on `connection`. Called outside any transaction: SQLite's
    /// migrations switch foreign keys off around their own.
    static func migrate(_ connection: any SQLConnection) throws {
        switch connection {
        case let database as Database: try database.migrate(schema)
        case let server as PostgresConnection: try server.migrate(postgres)
        default: preconditionFailure("the registry runs on SQLite or PostgreSQL")
        }
    }

    /// Whether the marks table exists yet.
    static func exists(_ connection: any SQLConnection) throws -> Bool {
        switch connection.dialect {
        case .sqlite:
            return try connection.scalar("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'registry_pruned'")
                .integerValue == 1
        case .postgres:
            return try connection.scalar("SELECT to_regclass('registry_pruned') IS NOT NULL").integerValue == 1
        }
    }
}
