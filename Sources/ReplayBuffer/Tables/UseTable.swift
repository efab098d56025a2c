import Storage

/// `replay_uses`: one row per (night, example) that a night's training set included; the privacy budget's
/// ledger. Rows go with their example (ON DELETE CASCADE), so forgetting an example leaves no trace of it.
enum UseTable {
    static let create = """
        CREATE TABLE replay_uses (
            lineage TEXT NOT NULL,
            night TEXT NOT NULL,
            example_id TEXT NOT NULL REFERENCES replay_examples (id) ON DELETE CASCADE,
            tokens INTEGER NOT NULL,
            recorded_at INTEGER NOT NULL,
            PRIMARY KEY (lineage, night, example_id)
        ) STRICT;
        CREATE INDEX replay_uses_example ON replay_uses (example_id, night);

        """

    static let createOnPostgres = """
        CREATE TABLE replay_uses (
            lineage TEXT COLLATE "C" NOT NULL,
            night TEXT COLLATE "C" NOT NULL,
            example_id TEXT COLLATE "C" NOT NULL REFERENCES replay_examples (id) ON DELETE CASCADE,
            tokens INTEGER NOT NULL,
            recorded_at BIGINT NOT NULL,
            PRIMARY KEY (lineage, night, example_id)
        );
        CREATE INDEX replay_uses_example ON replay_uses (example_id, night);

        """

    /// Forgets what an earlier attempt at the same night recorded, so a retried or replayed sample step
    /// spends the budget once.
    static func clear(_ db: any SQLConnection, lineage: String, night: String) throws {
        try db.run("DELETE FROM replay_uses WHERE lineage = ? AND night = ?", lineage, night)
    }

    static func record(_ db: any SQLConnection, lineage: String, night: String, exampleID: String, tokens: Int, now: Int64) throws {
        try db.run("INSERT INTO replay_uses (lineage, night, example_id, tokens, recorded_at) VALUES (?, ?, ?, ?, ?)",
                   lineage, night, exampleID, tokens, now)
    }

    static func tokens(_ db: any SQLConnection, lineage: String, night: String) throws -> Int {
        Int(try db.scalar("SELECT coalesce(sum(tokens), 0) FROM replay_uses WHERE lineage = ? AND night = ?",
                          lineage, night).integerValue ?? 0)
    }

    static func nights(_ db: any SQLConnection, lineage: String) throws -> Int {
        Int(try db.scalar("SELECT count(DISTINCT night) FROM replay_uses WHERE lineage = ?", lineage).integerValue ?? 0)
    }
}
