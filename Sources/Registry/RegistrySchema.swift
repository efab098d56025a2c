import Storage

/// The registry's tables (component `registry`), on SQLite (`schema`) and on PostgreSQL (`postgres`): the same
/// tables, columns and constraints, each backend with its own list of migrations (the dialects spell types and
/// table changes differently), so a version counts that backend's migrations. All of their SQL lives in the
/// `AdapterRegistry` files and `ScoreCache.swift`.
///
/// - `registry_versions`: one row per registered adapter; `number` counts up per lineage (shown as `vN`);
///   the adapter bytes are the blob named `adapter_digest`; rows are never updated except `metrics`.
///   `parent_id` is the version active when this one was registered; `trained_from_id` the version whose LoRA
///   weights its training started from (its weights parent), NULL for an adapter trained from zero or
///   registered before the column existed.
/// - `registry_active`: the active pointer per lineage; `version_id` NULL means the base model.
/// - `registry_history`: every pointer move with its reason (`gate`, `force`, `rollback`, `retire`), never rewritten.
/// - a retired version (`retired_at`, `retired_reason`) keeps its row and file but cannot be made active.
/// - `score_cache`: per-example held-out scores keyed by (model digest, adapter digest or `base`, example
///   digest), so the incumbent is not rescored every night.
/// - `registry_gate_reports`: the gate reports the engine made (`EngineGateReport`), each bound to the adapter
///   digest, the held-out snapshot digest and the incumbent it was measured against; never rewritten.
/// - triggers on both backends refuse what the code never does: a history row rewritten or deleted, a move
///   that does not start at the pointer, a pointer that is not where the last move put it, a version's
///   identity changed or its retirement undone.
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
        // The rules the registry's code keeps, kept by the database too, as the job tables' are: history is never
        // rewritten and each move starts where the pointer is; the pointer moves only to the version the lineage's
        // last move names, of that lineage and not retired; a version changes only its metrics and, once, its
        // retirement.
        """
        CREATE TRIGGER registry_history_never_rewritten BEFORE UPDATE ON registry_history
        BEGIN SELECT RAISE(ABORT, 'registry_history rows are never rewritten'); END;
        CREATE TRIGGER registry_history_never_deleted BEFORE DELETE ON registry_history
        BEGIN SELECT RAISE(ABORT, 'registry_history rows are never deleted'); END;
        CREATE TRIGGER registry_history_starts_at_the_pointer BEFORE INSERT ON registry_history
        WHEN NEW.from_version_id IS NOT (SELECT version_id FROM registry_active WHERE lineage = NEW.lineage)
        BEGIN SELECT RAISE(ABORT, 'a pointer move starts at the active version of its lineage'); END;
        CREATE TRIGGER registry_active_insert_follows_history BEFORE INSERT ON registry_active
        WHEN NEW.version_id IS NOT (SELECT to_version_id FROM registry_history WHERE lineage = NEW.lineage ORDER BY id DESC LIMIT 1)
          OR EXISTS (SELECT 1 FROM registry_versions WHERE id = NEW.version_id AND (lineage IS NOT NEW.lineage OR retired_at IS NOT NULL))
        BEGIN SELECT RAISE(ABORT, 'the active pointer moves only to the version its last history row names, of its lineage and not retired'); END;
        CREATE TRIGGER registry_active_update_follows_history BEFORE UPDATE ON registry_active
        WHEN NEW.version_id IS NOT (SELECT to_version_id FROM registry_history WHERE lineage = NEW.lineage ORDER BY id DESC LIMIT 1)
          OR EXISTS (SELECT 1 FROM registry_versions WHERE id = NEW.version_id AND (lineage IS NOT NEW.lineage OR retired_at IS NOT NULL))
          OR NEW.lineage IS NOT OLD.lineage
        BEGIN SELECT RAISE(ABORT, 'the active pointer moves only to the version its last history row names, of its lineage and not retired'); END;
        CREATE TRIGGER registry_versions_fixed BEFORE UPDATE ON registry_versions
        WHEN NEW.id IS NOT OLD.id OR NEW.lineage IS NOT OLD.lineage OR NEW.number IS NOT OLD.number
          OR NEW.parent_id IS NOT OLD.parent_id OR NEW.adapter_digest IS NOT OLD.adapter_digest OR NEW.size IS NOT OLD.size
          OR NEW.metadata IS NOT OLD.metadata OR NEW.created_at IS NOT OLD.created_at
          OR (OLD.retired_at IS NOT NULL AND (NEW.retired_at IS NOT OLD.retired_at OR NEW.retired_reason IS NOT OLD.retired_reason))
        BEGIN SELECT RAISE(ABORT, 'a registry version changes only its metrics and, once, its retirement'); END;
        """,
        // The engine's own gate reports (issue 41): only these make a version promotable, and only while the adapter,
        // the held-out snapshot and the incumbent they name are still the current ones.
        """
        CREATE TABLE registry_gate_reports (
            id INTEGER PRIMARY KEY,
            version_id INTEGER NOT NULL REFERENCES registry_versions (id),
            adapter_digest TEXT NOT NULL CHECK (length(adapter_digest) = 64),
            held_out_digest TEXT NOT NULL CHECK (length(held_out_digest) = 64),
            incumbent_version_id INTEGER REFERENCES registry_versions (id),
            incumbent_digest TEXT CHECK (incumbent_digest IS NULL OR length(incumbent_digest) = 64),
            outcome TEXT NOT NULL CHECK (outcome IN ('better', 'not_enough_evidence', 'worse')),
            report TEXT NOT NULL,
            maker TEXT NOT NULL CHECK (maker IN ('pipeline', 'eval_command')),
            made_at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX registry_gate_reports_version ON registry_gate_reports (version_id, id);
        CREATE TRIGGER registry_gate_reports_never_rewritten BEFORE UPDATE ON registry_gate_reports
        BEGIN SELECT RAISE(ABORT, 'registry_gate_reports rows are never rewritten'); END;
        """,
        // The weights parent (issue 42): the version whose LoRA weights a candidate started from, distinct from
        // `parent_id` (the version active when it was promoted). Fixed once written, like the rest of a row's identity.
        """
        ALTER TABLE registry_versions ADD COLUMN trained_from_id INTEGER REFERENCES registry_versions (id);
        DROP TRIGGER registry_versions_fixed;
        CREATE TRIGGER registry_versions_fixed BEFORE UPDATE ON registry_versions
        WHEN NEW.id IS NOT OLD.id OR NEW.lineage IS NOT OLD.lineage OR NEW.number IS NOT OLD.number
          OR NEW.parent_id IS NOT OLD.parent_id OR NEW.trained_from_id IS NOT OLD.trained_from_id
          OR NEW.adapter_digest IS NOT OLD.adapter_digest OR NEW.size IS NOT OLD.size
          OR NEW.metadata IS NOT OLD.metadata OR NEW.created_at IS NOT OLD.created_at
          OR (OLD.retired_at IS NOT NULL AND (NEW.retired_at IS NOT OLD.retired_at OR NEW.retired_reason IS NOT OLD.retired_reason))
        BEGIN SELECT RAISE(ABORT, 'a registry version changes only its metrics and, once, its retirement'); END;
        """,
        // The gate's fourth outcome (issue 42): `forgets`, a candidate that failed the forgetting guard. SQLite cannot
        // change a CHECK in place, so the table is rebuilt with its rows, index and trigger.
        """
        CREATE TABLE registry_gate_reports_rebuilt (
            id INTEGER PRIMARY KEY,
            version_id INTEGER NOT NULL REFERENCES registry_versions (id),
            adapter_digest TEXT NOT NULL CHECK (length(adapter_digest) = 64),
            held_out_digest TEXT NOT NULL CHECK (length(held_out_digest) = 64),
            incumbent_version_id INTEGER REFERENCES registry_versions (id),
            incumbent_digest TEXT CHECK (incumbent_digest IS NULL OR length(incumbent_digest) = 64),
            outcome TEXT NOT NULL CHECK (outcome IN ('better', 'not_enough_evidence', 'worse', 'forgets')),
            report TEXT NOT NULL,
            maker TEXT NOT NULL CHECK (maker IN ('pipeline', 'eval_command')),
            made_at INTEGER NOT NULL
        ) STRICT;
        INSERT INTO registry_gate_reports_rebuilt (id, version_id, adapter_digest, held_out_digest, incumbent_version_id,
                                                   incumbent_digest, outcome, report, maker, made_at)
            SELECT id, version_id, adapter_digest, held_out_digest, incumbent_version_id, incumbent_digest, outcome, report,
                   maker, made_at FROM registry_gate_reports;
        DROP TABLE registry_gate_reports;
        ALTER TABLE registry_gate_reports_rebuilt RENAME TO registry_gate_reports;
        CREATE INDEX registry_gate_reports_version ON registry_gate_reports (version_id, id);
        CREATE TRIGGER registry_gate_reports_never_rewritten BEFORE UPDATE ON registry_gate_reports
        BEGIN SELECT RAISE(ABORT, 'registry_gate_reports rows are never rewritten'); END;
        """,
    ])

    /// The same tables and rules on PostgreSQL, at once in the shape SQLite reached after its three migrations. Lineages
    /// compare byte by byte (`COLLATE "C"`), as on SQLite, so listings come in the same order whatever the
    /// server's locale.
    public static let postgres = Schema(component: "registry", migrations: [
        """
        CREATE TABLE registry_versions (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            lineage TEXT COLLATE "C" NOT NULL,
            number INTEGER NOT NULL CHECK (number >= 1),
            parent_id BIGINT REFERENCES registry_versions (id),
            adapter_digest TEXT NOT NULL CHECK (length(adapter_digest) = 64),
            size BIGINT NOT NULL CHECK (size > 0),
            metadata TEXT NOT NULL,
            metrics TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            retired_at BIGINT,
            retired_reason TEXT,
            UNIQUE (lineage, number)
        );
        CREATE TABLE registry_active (
            lineage TEXT COLLATE "C" PRIMARY KEY,
            version_id BIGINT REFERENCES registry_versions (id),
            updated_at BIGINT NOT NULL
        );
        CREATE TABLE registry_history (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            lineage TEXT COLLATE "C" NOT NULL,
            from_version_id BIGINT REFERENCES registry_versions (id),
            to_version_id BIGINT REFERENCES registry_versions (id),
            reason TEXT NOT NULL CHECK (reason IN ('gate', 'force', 'rollback', 'retire')),
            bypassed TEXT,
            actor TEXT NOT NULL,
            at BIGINT NOT NULL
        );
        CREATE INDEX registry_history_lineage ON registry_history (lineage, id);
        CREATE TABLE score_cache (
            model_digest TEXT NOT NULL,
            adapter TEXT NOT NULL,
            example_digest TEXT NOT NULL,
            mean_nll DOUBLE PRECISION NOT NULL,
            tokens INTEGER NOT NULL CHECK (tokens >= 0),
            created_at BIGINT NOT NULL,
            PRIMARY KEY (model_digest, adapter, example_digest)
        );
        CREATE FUNCTION registry_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'check_violation';
        END $$;
        CREATE TRIGGER registry_history_never_rewritten BEFORE UPDATE OR DELETE ON registry_history
            FOR EACH ROW EXECUTE FUNCTION registry_refuse('registry_history rows are never rewritten or deleted');
        CREATE TRIGGER registry_versions_fixed BEFORE UPDATE ON registry_versions FOR EACH ROW
            WHEN (NEW.id IS DISTINCT FROM OLD.id OR NEW.lineage IS DISTINCT FROM OLD.lineage
                  OR NEW.number IS DISTINCT FROM OLD.number OR NEW.parent_id IS DISTINCT FROM OLD.parent_id
                  OR NEW.adapter_digest IS DISTINCT FROM OLD.adapter_digest OR NEW.size IS DISTINCT FROM OLD.size
                  OR NEW.metadata IS DISTINCT FROM OLD.metadata OR NEW.created_at IS DISTINCT FROM OLD.created_at
                  OR (OLD.retired_at IS NOT NULL AND (NEW.retired_at IS DISTINCT FROM OLD.retired_at
                                                      OR NEW.retired_reason IS DISTINCT FROM OLD.retired_reason)))
            EXECUTE FUNCTION registry_refuse('a registry version changes only its metrics and, once, its retirement');
        CREATE FUNCTION registry_history_starts_at_the_pointer() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.from_version_id IS DISTINCT FROM (SELECT version_id FROM registry_active WHERE lineage = NEW.lineage) THEN
                RAISE EXCEPTION 'a pointer move starts at the active version of its lineage' USING ERRCODE = 'check_violation';
            END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER registry_history_starts_at_the_pointer BEFORE INSERT ON registry_history
            FOR EACH ROW EXECUTE FUNCTION registry_history_starts_at_the_pointer();
        CREATE FUNCTION registry_active_follows_history() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.version_id IS DISTINCT FROM
                   (SELECT to_version_id FROM registry_history WHERE lineage = NEW.lineage ORDER BY id DESC LIMIT 1)
               OR EXISTS (SELECT 1 FROM registry_versions
                          WHERE id = NEW.version_id AND (lineage <> NEW.lineage OR retired_at IS NOT NULL))
               OR (TG_OP = 'UPDATE' AND NEW.lineage <> OLD.lineage) THEN
                RAISE EXCEPTION 'the active pointer moves only to the version its last history row names, of its lineage and not retired'
                    USING ERRCODE = 'check_violation';
            END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER registry_active_follows_history BEFORE INSERT OR UPDATE ON registry_active
            FOR EACH ROW EXECUTE FUNCTION registry_active_follows_history();
        """,
        """
        CREATE TABLE registry_gate_reports (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            version_id BIGINT NOT NULL REFERENCES registry_versions (id),
            adapter_digest TEXT NOT NULL CHECK (length(adapter_digest) = 64),
            held_out_digest TEXT NOT NULL CHECK (length(held_out_digest) = 64),
            incumbent_version_id BIGINT REFERENCES registry_versions (id),
            incumbent_digest TEXT CHECK (incumbent_digest IS NULL OR length(incumbent_digest) = 64),
            outcome TEXT NOT NULL CHECK (outcome IN ('better', 'not_enough_evidence', 'worse')),
            report TEXT NOT NULL,
            maker TEXT NOT NULL CHECK (maker IN ('pipeline', 'eval_command')),
            made_at BIGINT NOT NULL
        );
        CREATE INDEX registry_gate_reports_version ON registry_gate_reports (version_id, id);
        CREATE TRIGGER registry_gate_reports_never_rewritten BEFORE UPDATE ON registry_gate_reports
            FOR EACH ROW EXECUTE FUNCTION registry_refuse('registry_gate_reports rows are never rewritten');
        """,
        """
        ALTER TABLE registry_versions ADD COLUMN trained_from_id BIGINT REFERENCES registry_versions (id);
        DROP TRIGGER registry_versions_fixed ON registry_versions;
        CREATE TRIGGER registry_versions_fixed BEFORE UPDATE ON registry_versions FOR EACH ROW
            WHEN (NEW.id IS DISTINCT FROM OLD.id OR NEW.lineage IS DISTINCT FROM OLD.lineage
                  OR NEW.number IS DISTINCT FROM OLD.number OR NEW.parent_id IS DISTINCT FROM OLD.parent_id
                  OR NEW.trained_from_id IS DISTINCT FROM OLD.trained_from_id
                  OR NEW.adapter_digest IS DISTINCT FROM OLD.adapter_digest OR NEW.size IS DISTINCT FROM OLD.size
                  OR NEW.metadata IS DISTINCT FROM OLD.metadata OR NEW.created_at IS DISTINCT FROM OLD.created_at
                  OR (OLD.retired_at IS NOT NULL AND (NEW.retired_at IS DISTINCT FROM OLD.retired_at
                                                      OR NEW.retired_reason IS DISTINCT FROM OLD.retired_reason)))
            EXECUTE FUNCTION registry_refuse('a registry version changes only its metrics and, once, its retirement');
        """,
        // The gate's fourth outcome, `forgets` (issue 42).
        """
        ALTER TABLE registry_gate_reports DROP CONSTRAINT registry_gate_reports_outcome_check,
            ADD CONSTRAINT registry_gate_reports_outcome_check CHECK (outcome IN ('better', 'not_enough_evidence', 'worse', 'forgets'));
        """,
    ])

    /// Brings the registry's tables on `connection` up to date with its backend's list.
    static func migrate(_ connection: any SQLConnection) throws {
        switch connection {
        case let database as Database: try database.migrate(schema)
        case let server as PostgresConnection: try server.migrate(postgres)
        default: preconditionFailure("the registry runs on SQLite or PostgreSQL")
        }
    }
}
