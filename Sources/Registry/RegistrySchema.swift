import Storage

/// The registry's tables (component `registry`). All of their SQL lives in the `AdapterRegistry` files and
/// `ScoreCache.swift`.
///
/// - `registry_versions`: one row per registered adapter; `number` counts up per lineage (shown as `vN`);
///   the adapter bytes are the blob named `adapter_digest`; rows are never updated except `metrics`.
/// - `registry_active`: the active pointer per lineage; `version_id` NULL means the base model.
/// - `registry_history`: every pointer move with its reason (`gate`, `force`, `rollback`, `retire`), never rewritten.
/// - a retired version (`retired_at`, `retired_reason`) keeps its row and file but cannot be made active.
/// - `score_cache`: per-example held-out scores keyed by (model digest, adapter digest or `base`, example
///   digest), so the incumbent is not rescored every night.
public enum RegistrySchema {
    public static let schema = Schema(component: "registry", migrations: [
        """
        CREATE TABLE registry_versions (
            id INTEGER PRIMARY KEY,
            lineage TEXT NOT NULL,
            number INTEGER NOT NULL CHECK (number >= 1),
            parent_id INTEGER REFERENCES registry_versions (id),
            adapter_digest TEXT NOT NULL CHECK (length(adapter_digest) = 64),
            size INTEGER NOT NULL CHECK (size > 0),
            metadata TEXT NOT NULL,
            metrics TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            UNIQUE (lineage, number)
        ) STRICT;
        CREATE TABLE registry_active (
            lineage TEXT PRIMARY KEY,
            version_id INTEGER REFERENCES registry_versions (id),
            updated_at INTEGER NOT NULL
        ) STRICT;
        CREATE TABLE registry_history (
            id INTEGER PRIMARY KEY,
            lineage TEXT NOT NULL,
            from_version_id INTEGER REFERENCES registry_versions (id),
            to_version_id INTEGER REFERENCES registry_versions (id),
            reason TEXT NOT NULL CHECK (reason IN ('gate', 'force', 'rollback')),
            bypassed TEXT,
            actor TEXT NOT NULL,
            at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX registry_history_lineage ON registry_history (lineage, id);
        CREATE TABLE score_cache (
            model_digest TEXT NOT NULL,
            adapter TEXT NOT NULL,
            example_digest TEXT NOT NULL,
            mean_nll REAL NOT NULL,
            tokens INTEGER NOT NULL CHECK (tokens >= 0),
            created_at INTEGER NOT NULL,
            PRIMARY KEY (model_digest, adapter, example_digest)
        ) STRICT, WITHOUT ROWID;
        """,
        // Retirement (issue 16): a version trained on erased text is kept (its file is never rewritten) but can no
        // longer be made active; the pointer moves off it with reason `retire`. SQLite cannot change a CHECK in
        // place, so the history table is rebuilt with the new reason.
        """
        ALTER TABLE registry_versions ADD COLUMN retired_at INTEGER;
        ALTER TABLE registry_versions ADD COLUMN retired_reason TEXT;
        CREATE TABLE registry_history_v2 (
            id INTEGER PRIMARY KEY,
            lineage TEXT NOT NULL,
            from_version_id INTEGER REFERENCES registry_versions (id),
            to_version_id INTEGER REFERENCES registry_versions (id),
            reason TEXT NOT NULL CHECK (reason IN ('gate', 'force', 'rollback', 'retire')),
            bypassed TEXT,
            actor TEXT NOT NULL,
            at INTEGER NOT NULL
        ) STRICT;
        INSERT INTO registry_history_v2 (id, lineage, from_version_id, to_version_id, reason, bypassed, actor, at)
            SELECT id, lineage, from_version_id, to_version_id, reason, bypassed, actor, at FROM registry_history;
        DROP TABLE registry_history;
        ALTER TABLE registry_history_v2 RENAME TO registry_history;
        CREATE INDEX registry_history_lineage ON registry_history (lineage, id);
        """,
    ])
}
